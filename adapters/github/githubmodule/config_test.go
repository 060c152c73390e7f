package githubmodule_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// load reads the GitHub configuration from vars; embedded says DATABASE_URL is unset.
func load(vars map[string]string, embedded bool) (githubmodule.Config, error) {
	return githubmodule.LoadConfig(providerkit.Env{Getenv: func(n string) string { return vars[n] }, Embedded: embedded})
}

var _ = Describe("The GitHub configuration", func() {
	It("uses every default of the contract when no variable is set", func() {
		c, err := load(nil, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.AppID).To(BeZero())
		Expect(c.WebhookSecret).To(BeEmpty())
		Expect(c.AppPrivateKey).To(BeEmpty(), "no App authentication by default")
		Expect(c.APIURL).To(Equal("https://api.github.com"))
		Expect(c.RedeliveryInterval).To(Equal(10 * time.Minute))
		Expect(c.WebURL).To(Equal("https://github.com"))
		Expect([]string{c.AppSlug, c.ClientID, c.ClientSecret}).To(Equal([]string{"", "", ""}), "no install flow")
		Expect(c.IgnoredVariables).To(BeEmpty())
	})

	It("reads each variable", func() {
		c, err := load(map[string]string{
			"HEPHAESTUS_GITHUB_APP_ID":              "4242",
			"HEPHAESTUS_GITHUB_WEBHOOK_SECRET":      " gh-secret",
			"HEPHAESTUS_GITHUB_API_URL":             "https://ghe.example/api/v3",
			"HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL": "1h",
			"HEPHAESTUS_GITHUB_OAUTH_URL":           "https://ghe.example",
			"HEPHAESTUS_GITHUB_APP_SLUG":            "hephaestus-dev",
			"HEPHAESTUS_GITHUB_CLIENT_ID":           "Iv1.abc",
			"HEPHAESTUS_GITHUB_CLIENT_SECRET":       "s3cret",
			"HEPHAESTUS_GITHUB_API_TOKEN":           "ghp_retired",
		}, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.AppID).To(Equal(int64(4242)))
		Expect(c.WebhookSecret).To(Equal([]byte(" gh-secret")), "a secret is taken byte for byte")
		Expect(c.APIURL).To(Equal("https://ghe.example/api/v3"))
		Expect(c.RedeliveryInterval).To(Equal(time.Hour))
		Expect(c.WebURL).To(Equal("https://ghe.example"))
		Expect([]string{c.AppSlug, c.ClientID, c.ClientSecret}).To(Equal([]string{"hephaestus-dev", "Iv1.abc", "s3cret"}))
		Expect(c.IgnoredVariables).To(Equal([]string{"HEPHAESTUS_GITHUB_API_TOKEN"}),
			"an instance-wide token is retired: it is named as ignored, and nothing reads it")
	})

	It("refuses the Makefile's public development webhook secret with a real database, never echoing it", func() {
		_, err := load(map[string]string{"HEPHAESTUS_GITHUB_WEBHOOK_SECRET": "dev-github-webhook-secret"}, false)
		Expect(err).To(MatchError("HEPHAESTUS_GITHUB_WEBHOOK_SECRET: is the public development secret of the Makefile; " +
			"set the GitHub App's own secret when DATABASE_URL is set"))
		_, err = load(map[string]string{"HEPHAESTUS_GITHUB_WEBHOOK_SECRET": "dev-github-webhook-secret"}, true)
		Expect(err).NotTo(HaveOccurred(), "the embedded development database accepts it")
	})

	DescribeTable("refuses an invalid value with a message naming the variable and the problem",
		func(name, value, message string) {
			_, err := load(map[string]string{name: value}, true)
			Expect(err).To(MatchError(name + ": " + message))
		},
		Entry(nil, "HEPHAESTUS_GITHUB_APP_ID", "my-app", `"my-app" is not a whole number ≥ 1`),
		Entry(nil, "HEPHAESTUS_GITHUB_APP_ID", "0", `"0" is not a whole number ≥ 1`),
		Entry(nil, "HEPHAESTUS_GITHUB_API_URL", "ghe.example/api/v3", "is not an absolute http(s) URL without credentials"),
		Entry(nil, "HEPHAESTUS_GITHUB_OAUTH_URL", "github.example", "is not an absolute http(s) URL without credentials"),
		Entry(nil, "HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL", "0s", `"0s" is not a positive duration`),
		Entry(nil, "HEPHAESTUS_GITHUB_APP_SLUG", "My App", `"My App" is not a GitHub App slug`),
		Entry(nil, "HEPHAESTUS_GITHUB_CLIENT_ID", "Iv1.abc", "is set without HEPHAESTUS_GITHUB_CLIENT_SECRET"),
		Entry(nil, "HEPHAESTUS_GITHUB_CLIENT_SECRET", "s3cret", "is set without HEPHAESTUS_GITHUB_CLIENT_ID"),
	)

	Describe("the App private key", func() {
		var pemKey string

		BeforeEach(func() {
			key, err := rsa.GenerateKey(rand.Reader, 2048)
			Expect(err).NotTo(HaveOccurred())
			pemKey = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
		})

		It("is read from the variable or from an owner-only file", func() {
			cfg, err := load(map[string]string{githubmodule.EnvAppID: "42", githubmodule.EnvAppPrivateKey: pemKey}, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.AppPrivateKey).To(Equal(pemKey))

			path := filepath.Join(GinkgoT().TempDir(), "app.pem")
			Expect(os.WriteFile(path, []byte(pemKey), 0o600)).To(Succeed())
			cfg, err = load(map[string]string{githubmodule.EnvAppID: "42", githubmodule.EnvAppPrivateKeyFile: path}, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.AppPrivateKey).To(Equal(pemKey))
		})

		It("refuses a key file that others may read, naming the variable and never the key", func() {
			path := filepath.Join(GinkgoT().TempDir(), "app.pem")
			Expect(os.WriteFile(path, []byte(pemKey), 0o640)).To(Succeed())
			Expect(os.Chmod(path, 0o640)).To(Succeed())
			_, err := load(map[string]string{githubmodule.EnvAppID: "42", githubmodule.EnvAppPrivateKeyFile: path}, true)
			ps := envconfig.ProblemsOf(err)
			Expect(ps).To(HaveLen(1))
			Expect(ps[0].Variable).To(Equal(githubmodule.EnvAppPrivateKeyFile))
			Expect(ps[0].Message).To(ContainSubstring("chmod 600"))
			Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})

		It("refuses the variable and the file together", func() {
			path := filepath.Join(GinkgoT().TempDir(), "app.pem")
			Expect(os.WriteFile(path, []byte(pemKey), 0o600)).To(Succeed())
			_, err := load(map[string]string{githubmodule.EnvAppID: "42", githubmodule.EnvAppPrivateKey: pemKey,
				githubmodule.EnvAppPrivateKeyFile: path}, true)
			Expect(err).To(MatchError("HEPHAESTUS_GITHUB_APP_PRIVATE_KEY_FILE: is set together with HEPHAESTUS_GITHUB_APP_PRIVATE_KEY; set one"))
		})

		It("refuses what is no RSA PEM key, and a key without the App id, without showing the value", func() {
			_, err := load(map[string]string{githubmodule.EnvAppID: "42", githubmodule.EnvAppPrivateKey: "-----BEGIN nonsense-----"}, true)
			Expect(err).To(MatchError(githubmodule.EnvAppPrivateKey + ": is not a PEM-encoded RSA private key"))
			_, err = load(map[string]string{githubmodule.EnvAppPrivateKey: pemKey}, true)
			Expect(err).To(MatchError(ContainSubstring(githubmodule.EnvAppPrivateKey + ": is set without HEPHAESTUS_GITHUB_APP_ID")))
			Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})

		It("is not refused again for the App id when the id itself is invalid", func() {
			_, err := load(map[string]string{githubmodule.EnvAppID: "my-app", githubmodule.EnvAppPrivateKey: pemKey}, true)
			Expect(envconfig.ProblemsOf(err)).To(ConsistOf(HaveField("Variable", githubmodule.EnvAppID)))
		})
	})
})
