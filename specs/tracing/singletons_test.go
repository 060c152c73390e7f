package tracing_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The one-server loops (inbox retention and gauges, change retention, the access recheck, the
// GitHub redelivery reconciler) each hold a singleton lease that outlives two or three of
// their periods. A restarted server has a new id, so a lease its predecessor kept would
// silence the loop until it ran out (hours with the default periods): a stopping server gives
// every one of them up. This suite starts whole servers as bootstrap wires them.
var _ = Describe("A stopping server's singleton leases", func() {
	It("are given up, so the next server runs every one-server loop at its first pass", func(ctx SpecContext) {
		in := newInstance(ctx)
		fake := newFakeGitHubApp()
		env := map[string]string{
			"HEPHAESTUS_GITHUB_APP_ID":              "4711",
			"HEPHAESTUS_GITHUB_APP_PRIVATE_KEY":     newAppKeyPEM(),
			"HEPHAESTUS_GITHUB_WEBHOOK_SECRET":      "singleton-github-webhook-secret-01",
			"HEPHAESTUS_GITHUB_API_URL":             fake.URL,
			"HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL": "1h", // the leases last two to three periods
			bootstrap.EnvAccessRecheckInterval:      "1h",
			bootstrap.EnvRetentionInterval:          "1h",
		}
		loops := []string{"inbox-retention", "inbox-gauges", "change-retention", "access-recheck", "github-redelivery"}
		held := func(holder string) func() []string {
			return func() []string {
				return support.Scalar[[]string](ctx, in.pool, `
SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM singleton_lease
WHERE holder = $1 AND leased_until > now()`, holder)
			}
		}

		a := in.start("server-a", env, nil)
		Eventually(held("server-a")).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).
			Should(ConsistOf(loops), "every loop took its lease at its first pass")
		a.Stop()
		Expect(held("server-a")()).To(BeEmpty(), "the stopped server holds no lease")

		in.start("server-b", env, nil)
		Eventually(held("server-b")).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).
			Should(ConsistOf(loops), "the next server takes every lease at once, not hours later")
	})
})

// newAppKeyPEM is a fresh GitHub App private key (PKCS #1 PEM).
func newAppKeyPEM() string {
	GinkgoHelper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}
