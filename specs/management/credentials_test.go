package management_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Connection secrets at rest: bound to their connection, sealed under a
// key id, rotatable online, and values of the form before key ids migrated.
var _ = Describe("Connection secrets at rest", func() {
	var (
		oldKey, newKey []byte
		oldBox, ring   *secrets.AESGCM
		ws             int64
	)
	randomKey := func() []byte {
		k := make([]byte, secrets.KeySize)
		_, _ = rand.Read(k)
		return k
	}
	directoryWith := func(box *secrets.AESGCM) *managementstore.SourceDirectory {
		d, err := managementstore.NewSourceDirectory(pool, box, managementstore.Config{Kinds: kindsOfFakeModules()})
		Expect(err).NotTo(HaveOccurred())
		return d
	}
	// newConnection stores a GITLAB connection whose secret seal(id) returns.
	newConnection := func(ctx context.Context, seal func(id int64) []byte) int64 {
		var id int64
		Expect(pool.QueryRow(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'GITLAB', 'GITLAB', 'https://gitlab.example.com') RETURNING id`, ws).Scan(&id)).To(Succeed())
		_, err := pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, id, seal(id))
		Expect(err).NotTo(HaveOccurred())
		return id
	}
	sealedOf := func(ctx context.Context, id int64) []byte {
		var b []byte
		Expect(pool.QueryRow(ctx, `SELECT secret_ciphertext FROM connection WHERE id = $1`, id).Scan(&b)).To(Succeed())
		return b
	}

	BeforeEach(func() {
		ws = createWorkspace("acme")
		oldKey, newKey = randomKey(), randomKey()
		var err error
		oldBox, err = secrets.NewKeyring([]secrets.Key{{ID: "2025", Secret: oldKey}})
		Expect(err).NotTo(HaveOccurred())
		ring, err = secrets.NewKeyring([]secrets.Key{{ID: "2026", Secret: newKey}, {ID: "2025", Secret: oldKey}})
		Expect(err).NotTo(HaveOccurred())
	})

	It("are sealed for their connection by the API: a ciphertext moved to another connection's row does not open", func(ctx SpecContext) {
		a := gitlabConnection("acme")
		b := gitlabConnection("acme")
		_, err := pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = (SELECT secret_ciphertext FROM connection WHERE id = $1) WHERE id = $2`, a, b)
		Expect(err).NotTo(HaveOccurred())
		_, err = directory.SourceConnection(ctx, a)
		Expect(err).NotTo(HaveOccurred())
		_, err = directory.SourceConnection(ctx, b)
		Expect(err).To(MatchError(secrets.ErrOpen))
	})

	It("rotate online to the first key, re-reading each secret under its row lock so a concurrent change is never overwritten", func(ctx SpecContext) {
		idle := newConnection(ctx, func(id int64) []byte { s, _ := oldBox.Seal(id, []byte("idle-secret")); return s })
		busy := newConnection(ctx, func(id int64) []byte { s, _ := oldBox.Seal(id, []byte("before-change")); return s })

		// A secret change (by a server that still seals with the old key) holds busy's row.
		change, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = change.Rollback(ctx) })
		changed, _ := oldBox.Seal(busy, []byte("after-change"))
		_, err = change.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2, config_version = config_version + 1 WHERE id = $1`, busy, changed)
		Expect(err).NotTo(HaveOccurred())

		done := make(chan managementstore.ResealResult, 1)
		go func() {
			defer GinkgoRecover()
			res, err := managementstore.ResealSecrets(context.Background(), pool, ring, managementstore.ResealAll)
			Expect(err).NotTo(HaveOccurred())
			done <- res
		}()
		// Meanwhile every server keeps verifying: old and new keys both open.
		Eventually(func() secrets.Form { f, _ := ring.FormOf(idle, sealedOf(ctx, idle)); return f }).Should(Equal(secrets.Current))
		c, err := directoryWith(ring).SourceConnection(ctx, idle)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(c.Secret)).To(Equal("idle-secret"))
		// The rotation waits for the change's row lock, as pg_stat_activity shows.
		support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, change), 1)
		Expect(done).NotTo(Receive())

		Expect(change.Commit(ctx)).To(Succeed())
		var res managementstore.ResealResult
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&res))
		Expect(res).To(Equal(managementstore.ResealResult{Checked: 2, Resealed: 2}))

		c, err = directoryWith(ring).SourceConnection(ctx, busy)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(c.Secret)).To(Equal("after-change"), "the change committed first and was re-sealed, not overwritten")
		Expect(ring.FormOf(busy, sealedOf(ctx, busy))).To(Equal(secrets.Current))
		Expect(sealedOf(ctx, busy)[2:6]).To(Equal([]byte("2026")), "the key id is in the ciphertext")

		// Once rotated, the old key can go.
		newOnly, err := secrets.NewKeyring([]secrets.Key{{ID: "2026", Secret: newKey}})
		Expect(err).NotTo(HaveOccurred())
		_, err = directoryWith(newOnly).SourceConnection(ctx, idle)
		Expect(err).NotTo(HaveOccurred())
		again, err := managementstore.ResealSecrets(ctx, pool, ring, managementstore.ResealAll)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Resealed).To(BeZero(), "a second rotation has nothing to do")
	})

	It("migrate values sealed before key ids (no associated data) and leave values of other keys to the rotation", func(ctx SpecContext) {
		block, err := aes.NewCipher(oldKey)
		Expect(err).NotTo(HaveOccurred())
		aead, err := cipher.NewGCM(block)
		Expect(err).NotTo(HaveOccurred())
		legacy := newConnection(ctx, func(int64) []byte {
			nonce := make([]byte, aead.NonceSize())
			_, _ = rand.Read(nonce)
			return aead.Seal(bytes.Clone(nonce), nonce, []byte("legacy-secret"), nil)
		})
		older := newConnection(ctx, func(id int64) []byte { s, _ := oldBox.Seal(id, []byte("older-key")); return s })
		olderBefore := sealedOf(ctx, older)

		legacyRing, err := secrets.NewKeyring([]secrets.Key{{ID: "2026", Secret: newKey}, {ID: secrets.DefaultKeyID, Secret: oldKey}})
		Expect(err).NotTo(HaveOccurred())
		c, err := directoryWith(legacyRing).SourceConnection(ctx, legacy)
		Expect(err).NotTo(HaveOccurred(), "a legacy value opens before the migration")
		Expect(string(c.Secret)).To(Equal("legacy-secret"))

		res, err := managementstore.ResealSecrets(ctx, pool, ring, managementstore.ResealLegacy)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Resealed).To(Equal(1))
		Expect(ring.FormOf(legacy, sealedOf(ctx, legacy))).To(Equal(secrets.Current))
		Expect(sealedOf(ctx, older)).To(Equal(olderBefore), "another key's value is the rotation's, not the migration's")
		c, err = directoryWith(ring).SourceConnection(ctx, legacy)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(c.Secret)).To(Equal("legacy-secret"))
	})

	It("report a secret no configured key opens, by connection id, and re-seal the others", func(ctx SpecContext) {
		stranger, _ := secrets.NewAESGCM(randomKey())
		lost := newConnection(ctx, func(id int64) []byte { s, _ := stranger.Seal(id, []byte("x")); return s })
		fine := newConnection(ctx, func(id int64) []byte { s, _ := oldBox.Seal(id, []byte("y")); return s })
		res, err := managementstore.ResealSecrets(ctx, pool, ring, managementstore.ResealAll)
		Expect(err).To(MatchError(And(ContainSubstring("connection"), ContainSubstring(itoa(lost)))))
		Expect(res.Resealed).To(Equal(1))
		Expect(ring.FormOf(fine, sealedOf(ctx, fine))).To(Equal(secrets.Current))
	})
})

// kindsOfFakeModules are the connection kinds the suite's fake provider modules declare.
func kindsOfFakeModules() []connection.Kind {
	return support.Kinds(fakeModules()...)
}
