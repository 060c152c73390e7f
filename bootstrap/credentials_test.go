package bootstrap

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

var _ = Describe("Connection secrets sealed before key ids, at start", func() {
	It("are migrated while the legacy fallback is open, and the start says how many remain and whether they open", func(ctx SpecContext) {
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		pool, err := db.Pool(ctx, 2)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(pool.Close)

		key := make([]byte, secrets.KeySize)
		_, _ = rand.Read(key)
		legacy := func() []byte {
			block, _ := aes.NewCipher(key)
			aead, _ := cipher.NewGCM(block)
			nonce := make([]byte, aead.NonceSize())
			_, _ = rand.Read(nonce)
			return aead.Seal(bytes.Clone(nonce), nonce, []byte("legacy-secret"), nil)
		}
		var id int64
		Expect(pool.QueryRow(ctx, `
			WITH w AS (INSERT INTO workspace (slug, name) VALUES ('acme', 'Acme') RETURNING id)
			INSERT INTO connection (workspace_id, kind, provider, source_server_url, secret_ciphertext)
			SELECT w.id, 'GITLAB', 'GITLAB', 'https://gitlab.example.com', $1 FROM w RETURNING id`, legacy()).Scan(&id)).To(Succeed())
		s := instanceSecrets{CredentialsKey: key}

		// start runs the start-up pass and answers its one line about legacy values.
		start := func() map[string]any {
			GinkgoHelper()
			core, logs := observer.New(zap.InfoLevel)
			migrateLegacySecrets(ctx, pool, s, zap.New(core))
			said := logs.FilterMessageSnippet("sealed before key ids").FilterField(zap.Bool("fallbackOpen", true)).All()
			said = append(said, logs.FilterMessageSnippet("sealed before key ids").FilterField(zap.Bool("fallbackOpen", false)).All()...)
			Expect(said).To(HaveLen(1))
			return said[0].ContextMap()
		}

		Expect(start()).To(Equal(map[string]any{"remaining": int64(0), "fallbackOpen": true}), "the legacy value was re-sealed")
		box, err := secrets.NewAESGCM(key)
		Expect(err).NotTo(HaveOccurred())
		var sealed []byte
		Expect(pool.QueryRow(ctx, `SELECT secret_ciphertext FROM connection WHERE id = $1`, id).Scan(&sealed)).To(Succeed())
		Expect(box.FormOf(id, sealed)).To(Equal(secrets.Current))

		// After rotate-credentials closed the fallback, a legacy value planted in the table is
		// counted at start and left as it is.
		fallback, err := managementstore.NewLegacyFallback(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(fallback.Close(ctx)).To(Succeed())
		planted := legacy()
		_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, id, planted)
		Expect(err).NotTo(HaveOccurred())
		Expect(start()).To(Equal(map[string]any{"remaining": int64(1), "fallbackOpen": false}))
		Expect(pool.QueryRow(ctx, `SELECT secret_ciphertext FROM connection WHERE id = $1`, id).Scan(&sealed)).To(Succeed())
		Expect(sealed).To(Equal(planted), "a planted legacy value is not re-sealed")
	})
})
