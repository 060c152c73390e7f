package bootstrap_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

var _ = Describe("The GitHub App private key", func() {
	var pemKey string

	BeforeEach(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		pemKey = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	})

	It("is read from the variable or from an owner-only file", func() {
		cfg, err := load(env{bootstrap.EnvGitHubAppID: "42", bootstrap.EnvGitHubAppPrivateKey: pemKey})
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GitHubAppPrivateKey).To(Equal(pemKey))

		path := filepath.Join(GinkgoT().TempDir(), "app.pem")
		Expect(os.WriteFile(path, []byte(pemKey), 0o600)).To(Succeed())
		cfg, err = load(env{bootstrap.EnvGitHubAppID: "42", bootstrap.EnvGitHubAppPrivateKeyFile: path})
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GitHubAppPrivateKey).To(Equal(pemKey))

		cfg, err = load(env{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.GitHubAppPrivateKey).To(BeEmpty(), "no App authentication by default")
	})

	It("refuses a key file that others may read, naming the variable and never the key", func() {
		path := filepath.Join(GinkgoT().TempDir(), "app.pem")
		Expect(os.WriteFile(path, []byte(pemKey), 0o640)).To(Succeed())
		Expect(os.Chmod(path, 0o640)).To(Succeed())
		_, err := load(env{bootstrap.EnvGitHubAppID: "42", bootstrap.EnvGitHubAppPrivateKeyFile: path})
		Expect(err).To(HaveOccurred())
		ps := problems(err)
		Expect(ps).To(HaveLen(1))
		Expect(ps[0].Variable).To(Equal(bootstrap.EnvGitHubAppPrivateKeyFile))
		Expect(ps[0].Message).To(ContainSubstring("chmod 600"))
		Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
	})

	It("refuses what is no RSA PEM key, and a key without the App id, without showing the value", func() {
		_, err := load(env{bootstrap.EnvGitHubAppID: "42", bootstrap.EnvGitHubAppPrivateKey: "-----BEGIN nonsense-----"})
		Expect(err).To(MatchError(bootstrap.EnvGitHubAppPrivateKey + ": is not a PEM-encoded RSA private key"))
		_, err = load(env{bootstrap.EnvGitHubAppPrivateKey: pemKey})
		Expect(err).To(MatchError(ContainSubstring(bootstrap.EnvGitHubAppPrivateKey + ": is set without HEPHAESTUS_GITHUB_APP_ID")))
		Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
	})
})
