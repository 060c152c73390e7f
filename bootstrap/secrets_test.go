package bootstrap

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var _ = Describe("Instance secrets", func() {
	var (
		logs    *observer.ObservedLogs
		log     *zap.Logger
		dir     string
		console *bytes.Buffer
	)
	BeforeEach(func() {
		console = &bytes.Buffer{}
		var core zapcore.Core
		core, logs = observer.New(zapcore.DebugLevel)
		log = zap.New(core)
		dir = filepath.Join(GinkgoT().TempDir(), "data")
	})

	// linesWith counts log entries whose message or fields contain s.
	linesWith := func(s string) int {
		n := 0
		for _, e := range logs.All() {
			if e.Message == s {
				n++
				continue
			}
			for _, v := range e.ContextMap() {
				if v == s {
					n++
					break
				}
			}
		}
		return n
	}

	When("the database is embedded", func() {
		It("generates the admin token into the data dir, shows it once on the console and never in the log, and reuses it", func() {
			cfg := Config{DataDir: dir}
			first, err := resolveSecrets(cfg, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(first.AdminToken)).To(BeNumerically(">=", 32))
			Expect(first.AdminDisabled).To(BeFalse())

			path := filepath.Join(dir, AdminTokenFile)
			info, err := os.Stat(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
			Expect(linesWith(first.AdminToken)).To(BeZero(), "never in the structured (JSON) log")
			Expect(strings.Count(console.String(), first.AdminToken)).To(Equal(1))
			for _, e := range logs.All() {
				Expect(fmt.Sprint(e.Message, e.ContextMap())).NotTo(ContainSubstring(first.AdminToken))
			}

			second, err := resolveSecrets(cfg, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.AdminToken).To(Equal(first.AdminToken))
			Expect(strings.Count(console.String(), first.AdminToken)).To(Equal(1), "shown at generation only")
		})

		It("generates the credentials key into the data dir, never logs it, and reuses it", func() {
			cfg := Config{DataDir: dir}
			first, err := resolveSecrets(cfg, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(first.CredentialsKey).To(HaveLen(32))

			path := filepath.Join(dir, CredentialsKeyFile)
			info, err := os.Stat(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
			Expect(linesWith(base64.StdEncoding.EncodeToString(first.CredentialsKey))).To(BeZero())

			second, err := resolveSecrets(cfg, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.CredentialsKey).To(Equal(first.CredentialsKey))
		})

		It("uses configured secrets instead of generating files", func() {
			key := make([]byte, 32)
			s, err := resolveSecrets(Config{DataDir: dir, AdminToken: "configured-admin-token", CredentialsKey: key}, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.AdminToken).To(Equal("configured-admin-token"))
			Expect(s.CredentialsKey).To(Equal(key))
			Expect(filepath.Join(dir, AdminTokenFile)).NotTo(BeAnExistingFile())
			Expect(filepath.Join(dir, CredentialsKeyFile)).NotTo(BeAnExistingFile())
		})

		DescribeTable("refuses a secret file readable or writable by others, naming it and the fix",
			func(name string, mode os.FileMode) {
				Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
				path := filepath.Join(dir, name)
				Expect(os.WriteFile(path, []byte("a-value-of-enough-length-0123456789\n"), 0o600)).To(Succeed())
				Expect(os.Chmod(path, mode)).To(Succeed())
				_, err := resolveSecrets(Config{DataDir: dir}, log, console)
				Expect(err).To(MatchError(And(ContainSubstring(path), ContainSubstring("chmod 600"))))
				Expect(console.String()).To(BeEmpty())
			},
			Entry("admin token, world-readable", AdminTokenFile, os.FileMode(0o644)),
			Entry("admin token, group-readable", AdminTokenFile, os.FileMode(0o640)),
			Entry("credentials key, group-writable", CredentialsKeyFile, os.FileMode(0o620)),
		)

		It("replaces an empty secret file that a crash between create and write left behind", func() {
			Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, AdminTokenFile), nil, 0o600)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, CredentialsKeyFile), []byte("\n"), 0o600)).To(Succeed())
			s, err := resolveSecrets(Config{DataDir: dir}, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(s.AdminToken)).To(BeNumerically(">=", 32))
			Expect(s.CredentialsKey).To(HaveLen(32))
		})

		It("writes secret files atomically, leaving no temporary file", func() {
			_, err := resolveSecrets(Config{DataDir: dir}, log, console)
			Expect(err).NotTo(HaveOccurred())
			entries, err := os.ReadDir(dir)
			Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			Expect(names).To(ConsistOf(AdminTokenFile, CredentialsKeyFile))
		})

		It("refuses a damaged credentials key file rather than replacing it", func() {
			Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, CredentialsKeyFile), []byte("short\n"), 0o600)).To(Succeed())
			_, err := resolveSecrets(Config{DataDir: dir}, log, console)
			Expect(err).To(MatchError(ContainSubstring(CredentialsKeyFile)))
			Expect(os.ReadFile(filepath.Join(dir, CredentialsKeyFile))).To(Equal([]byte("short\n")))
		})
	})

	When("DATABASE_URL is set", func() {
		It("refuses to start without a credentials key, naming the variable", func() {
			_, err := resolveSecrets(Config{DatabaseURL: "postgres://db/heph", AdminToken: "configured-admin-token"}, log, console)
			var ce *ConfigError
			Expect(errors.As(err, &ce)).To(BeTrue())
			Expect(ce.Problems).To(HaveLen(1))
			Expect(ce.Problems[0].Variable).To(Equal(EnvCredentialsKey))
		})

		It("disables the instance administrator without a token, with a warning, and writes no file", func() {
			s, err := resolveSecrets(Config{DatabaseURL: "postgres://db/heph", DataDir: dir, CredentialsKey: make([]byte, 32)}, log, console)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.AdminDisabled).To(BeTrue())
			Expect(len(s.AdminToken)).To(BeNumerically(">=", minAdminTokenLength), "an unknown random token, so nobody is admin")
			Expect(linesWith(s.AdminToken)).To(BeZero())
			Expect(logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("admin").Len()).To(Equal(1))
			Expect(dir).NotTo(BeADirectory())
		})
	})
})
