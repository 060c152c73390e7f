package management_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Values sealed before key ids (nonce || ciphertext, no associated data) carry nothing that
// binds them to a connection. The store reads a secret by its own row, so such a value is used
// only for the row it is stored in; but a value copied into another row (or restored from an
// old backup) would open there too, so the service stops opening that form once
// `hephaestus rotate-credentials` has re-sealed every secret.
var _ = Describe("Connection secrets sealed before key ids", func() {
	var (
		key      []byte
		ring     *secrets.AESGCM
		fallback *managementstore.LegacyFallback
		box      *secrets.AESGCM // the server's: ring behind the fallback's gate
		ws       int64
	)

	// legacySeal seals plaintext as versions before key ids did.
	legacySeal := func(plaintext string) []byte {
		GinkgoHelper()
		block, err := aes.NewCipher(key)
		Expect(err).NotTo(HaveOccurred())
		aead, err := cipher.NewGCM(block)
		Expect(err).NotTo(HaveOccurred())
		nonce := make([]byte, aead.NonceSize())
		_, _ = rand.Read(nonce)
		return aead.Seal(bytes.Clone(nonce), nonce, []byte(plaintext), nil)
	}
	// connectionWith stores a GITLAB connection whose secret is sealed.
	connectionWith := func(ctx context.Context, sealed []byte) int64 {
		GinkgoHelper()
		var id int64
		Expect(pool.QueryRow(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url, secret_ciphertext)
			VALUES ($1, 'GITLAB', 'GITLAB', 'https://gitlab.example.com', $2) RETURNING id`, ws, sealed).Scan(&id)).To(Succeed())
		return id
	}
	plant := func(ctx context.Context, id int64, sealed []byte) {
		GinkgoHelper()
		_, err := pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, id, sealed)
		Expect(err).NotTo(HaveOccurred())
	}
	// secretOf is the connection's secret as admission's directory opens it with b.
	secretOf := func(ctx context.Context, b *secrets.AESGCM, id int64) (string, error) {
		GinkgoHelper()
		d, err := managementstore.NewSourceDirectory(pool, b, managementstore.Config{Kinds: kindsOfFakeModules()})
		Expect(err).NotTo(HaveOccurred())
		c, err := d.SourceConnection(ctx, id)
		if err != nil {
			return "", err
		}
		return string(c.Secret), nil
	}
	gatedBox := func() (*managementstore.LegacyFallback, *secrets.AESGCM) {
		GinkgoHelper()
		f, err := managementstore.NewLegacyFallback(pool)
		Expect(err).NotTo(HaveOccurred())
		return f, ring.WithLegacyGate(f.Opens)
	}

	BeforeEach(func() {
		ws = createWorkspace("acme")
		key = make([]byte, secrets.KeySize)
		_, _ = rand.Read(key)
		var err error
		ring, err = secrets.NewAESGCM(key)
		Expect(err).NotTo(HaveOccurred())
		fallback, box = gatedBox()
	})

	It("open for the row they are stored in until rotate-credentials re-sealed them all; then one planted later opens nowhere", func(ctx SpecContext) {
		legacy := connectionWith(ctx, legacySeal("legacy-secret"))
		Expect(secretOf(ctx, box, legacy)).To(Equal("legacy-secret"), "before the rotation a legacy value opens")
		other := connectionWith(ctx, nil)
		sealedOther, err := ring.Seal(other, []byte("other-secret"))
		Expect(err).NotTo(HaveOccurred())
		plant(ctx, other, sealedOther)

		res, closed, err := managementstore.RotateSecrets(ctx, pool, box, fallback)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed).To(BeTrue())
		Expect(res).To(Equal(managementstore.ResealResult{Checked: 2, Resealed: 1}))
		Expect(support.Scalar[bool](ctx, pool, `SELECT legacy_closed_at IS NOT NULL FROM credentials_state`)).To(BeTrue())
		Expect(secretOf(ctx, box, legacy)).To(Equal("legacy-secret"), "the re-sealed value opens, now bound to its row")

		// A legacy value planted afterwards (copied from an old backup, or from another row)
		// opens neither for its row nor for another, on this server or on one that never saw
		// the fallback open.
		plant(ctx, legacy, legacySeal("legacy-secret"))
		plant(ctx, other, legacySeal("planted"))
		_, otherServer := gatedBox()
		for _, b := range []*secrets.AESGCM{box, otherServer} {
			for _, id := range []int64{legacy, other} {
				_, err := secretOf(ctx, b, id)
				Expect(err).To(MatchError(secrets.ErrLegacyClosed))
				Expect(err).To(MatchError(secrets.ErrOpen))
			}
		}

		// Neither the start-up migration nor a second rotation re-seals it (that would bind a
		// value that may come from another row to this one): both count it as left.
		res, err = managementstore.ResealSecrets(ctx, pool, otherServer, managementstore.ResealLegacy)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Legacy).To(Equal(2))
		Expect(res.Resealed).To(BeZero())
		res, closed, err = managementstore.RotateSecrets(ctx, pool, otherServer, fallback)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed).To(BeTrue())
		Expect(res).To(Equal(managementstore.ResealResult{Checked: 2, Legacy: 2}))
		_, err = secretOf(ctx, otherServer, legacy)
		Expect(err).To(MatchError(secrets.ErrLegacyClosed))
	})

	It("keep opening when the rotation could not re-seal every secret", func(ctx SpecContext) {
		legacy := connectionWith(ctx, legacySeal("legacy-secret"))
		stranger, err := secrets.NewAESGCM(make([]byte, secrets.KeySize))
		Expect(err).NotTo(HaveOccurred())
		lost := connectionWith(ctx, nil)
		sealed, err := stranger.Seal(lost, []byte("x"))
		Expect(err).NotTo(HaveOccurred())
		plant(ctx, lost, sealed)

		_, closed, err := managementstore.RotateSecrets(ctx, pool, box, fallback)
		Expect(err).To(MatchError(ContainSubstring(itoa(lost))))
		Expect(closed).To(BeFalse())
		Expect(support.Scalar[bool](ctx, pool, `SELECT EXISTS (SELECT 1 FROM credentials_state WHERE legacy_closed_at IS NOT NULL)`)).To(BeFalse())
		plant(ctx, legacy, legacySeal("still-legacy"))
		_, otherServer := gatedBox()
		Expect(secretOf(ctx, otherServer, legacy)).To(Equal("still-legacy"))
	})
})
