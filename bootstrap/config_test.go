package bootstrap_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

// env is a fake environment for LoadConfig.
type env map[string]string

func (e env) get(name string) string { return e[name] }

func load(e env) (bootstrap.Config, error) { return bootstrap.LoadConfig(e.get) }

// problems returns the ConfigError's problems of err, failing the spec for any other error.
func problems(err error) []bootstrap.Problem {
	var ce *bootstrap.ConfigError
	ExpectWithOffset(1, errors.As(err, &ce)).To(BeTrue(), "want a *ConfigError, got %v", err)
	return ce.Problems
}

var key32 = make([]byte, 32)

var _ = Describe("Configuration", func() {
	When("no variable is set", func() {
		It("uses every default of the contract", func() {
			c, err := load(env{})
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Embedded()).To(BeTrue())
			Expect(c.DatabaseURL).To(BeEmpty())
			Expect(c.HTTPAddr).To(Equal(":8080"))
			Expect(c.AdminToken).To(BeEmpty())
			Expect(c.CredentialsKey).To(BeNil())
			Expect(c.WebhookMaxBytes).To(Equal(int64(26214400)))
			Expect(c.WebhookInflightBytes).To(Equal(int64(64 << 20)))
			Expect(c.AdmissionLockTimeout).To(Equal(2 * time.Second))
			Expect(c.ShutdownTimeout).To(Equal(25 * time.Second))
			Expect(c.DataDir).To(Equal("./.data"))
			Expect(c.LogFormat).To(Equal("json"))
			Expect(c.LogLevel).To(Equal("info"))
			Expect(c.ServerID).To(MatchRegexp(`^.+-\d+-[0-9a-f]{8}$`))

			k := c.Consumer
			Expect(k.Claimers).To(Equal(8))
			Expect(k.ReplayWindow).To(Equal(72 * time.Hour))
			Expect(k.DeadRetention).To(Equal(30 * 24 * time.Hour))
			Expect(k.HandlerTimeout).To(Equal(30 * time.Minute))
			Expect(k.PoisonMaxAttempts).To(Equal(10))
			Expect(k.PoisonBaseDelay).To(Equal(2 * time.Second))
			Expect(k.PoisonMaxDelay).To(Equal(5 * time.Minute))
			Expect(k.LeaseDuration).To(Equal(2 * time.Minute))
			Expect(k.RenewInterval).To(Equal(30 * time.Second))
			Expect(k.ReaperInterval).To(Equal(30 * time.Second))
			Expect(k.PollInterval).To(Equal(5 * time.Second))
			Expect(k.RetentionInterval).To(Equal(time.Hour))
			Expect(c.AccessRecheckInterval).To(Equal(24*time.Hour), "HEPHAESTUS_ACCESS_RECHECK_INTERVAL")
			Expect(c.ChangesRetention).To(Equal(7*24*time.Hour), "HEPHAESTUS_CHANGES_RETENTION")
			Expect(c.ChangesStreamMax).To(Equal(15*time.Minute), "HEPHAESTUS_CHANGES_STREAM_MAX")
			Expect(c.ReplayMaxRunning).To(Equal(int64(2)), "HEPHAESTUS_REPLAY_MAX_RUNNING")
			Expect(c.ReplayMaxRows).To(Equal(int64(100000)), "HEPHAESTUS_REPLAY_MAX_ROWS")
			Expect(c.SecureCookies).To(BeFalse(), "no https public URL, no HEPHAESTUS_COOKIE_SECURE")
			Expect(c.OperatorReadConnections).To(Equal(4), "HEPHAESTUS_OPERATOR_READ_CONNECTIONS")
			Expect(c.OperatorReadTimeout).To(Equal(5*time.Second), "HEPHAESTUS_OPERATOR_READ_TIMEOUT")
			Expect(c.OperatorReadsPerAccount).To(Equal(2), "HEPHAESTUS_OPERATOR_READS_PER_ACCOUNT")
		})

		It("builds the domain's retry policy and lease timing from the defaults", func() {
			c, err := load(env{})
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Consumer.Retry.MaxAttempts()).To(Equal(10))
			Expect(c.Consumer.Retry.Delay(1)).To(Equal(2 * time.Second))
			Expect(c.Consumer.Retry.Delay(20)).To(Equal(5 * time.Minute))
			Expect(c.Consumer.Lease.Duration()).To(Equal(2 * time.Minute))
			Expect(c.Consumer.Lease.RenewInterval()).To(Equal(30 * time.Second))
			Expect(c.Consumer.Lease.HandlerTimeout()).To(Equal(30 * time.Minute))
		})

		It("gives each process its own server id", func() {
			a, _ := load(env{})
			b, _ := load(env{})
			Expect(a.ServerID).NotTo(Equal(b.ServerID))
		})
	})

	When("a real database is configured", func() {
		It("tells each provider module, which then refuses the Makefile's public development secrets", func() {
			dev := env{"HEPHAESTUS_GITHUB_WEBHOOK_SECRET": "dev-github-webhook-secret",
				"HEPHAESTUS_SLACK_SIGNING_SECRET": "dev-slack-signing-secret"}
			_, err := load(dev)
			Expect(err).NotTo(HaveOccurred(), "the embedded development database accepts them")
			dev["DATABASE_URL"] = "postgres://app@db.internal/heph"
			_, err = load(dev)
			vars := []string{}
			for _, p := range problems(err) {
				vars = append(vars, p.Variable)
				Expect(p.Message).To(ContainSubstring("development secret"))
				Expect(p.Message).NotTo(ContainSubstring("dev-"), "a secret is never echoed")
			}
			Expect(vars).To(ConsistOf("HEPHAESTUS_GITHUB_WEBHOOK_SECRET", "HEPHAESTUS_SLACK_SIGNING_SECRET"))
		})
	})

	Describe("the provider modules", func() {
		It("are made by the loaders of adapters/providers, one per provider, each from its own variables", func() {
			c, err := load(env{"HEPHAESTUS_PUBLIC_URL": "https://hx.example"})
			Expect(err).NotTo(HaveOccurred())
			labels := []string{}
			for _, m := range c.Modules {
				labels = append(labels, m.Provider().Label())
			}
			Expect(labels).To(Equal([]string{"github", "gitlab", "slack", "outline"}))
		})

		It("report their invalid variables together with the process's", func() {
			_, err := load(env{
				"HEPHAESTUS_LOG_FORMAT":      "xml",
				"HEPHAESTUS_GITLAB_API_URL":  "gitlab.example/api/v4",
				"HEPHAESTUS_OUTLINE_API_URL": "https://outline.example/api?x=1",
			})
			Expect(err).To(MatchError(ContainSubstring(
				"HEPHAESTUS_GITLAB_API_URL: is not an absolute http(s) URL without credentials")))
			vars := []string{}
			for _, p := range problems(err) {
				vars = append(vars, p.Variable)
			}
			Expect(vars).To(ConsistOf("HEPHAESTUS_LOG_FORMAT", "HEPHAESTUS_GITLAB_API_URL", "HEPHAESTUS_OUTLINE_API_URL"))
		})
	})

	When("every variable is set", func() {
		It("reads each one", func() {
			c, err := load(env{
				"DATABASE_URL":                                        "postgres://app@db.internal:5432/heph?sslmode=disable",
				"HEPHAESTUS_HTTP_ADDR":                                "127.0.0.1:9090",
				"HEPHAESTUS_ADMIN_TOKEN":                              "admin-secret-0123456789",
				"HEPHAESTUS_CREDENTIALS_KEY":                          base64.StdEncoding.EncodeToString(key32),
				"HEPHAESTUS_WEBHOOK_MAX_BYTES":                        "1048576",
				"HEPHAESTUS_DATA_DIR":                                 "/var/lib/hephaestus",
				"HEPHAESTUS_LOG_FORMAT":                               "console",
				"HEPHAESTUS_LOG_LEVEL":                                "debug",
				"HEPHAESTUS_SERVER_ID":                                "web-1",
				"HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS":            "3",
				"HEPHAESTUS_INTEGRATION_CONSUMER_REPLAY_WINDOW":       "1d",
				"HEPHAESTUS_INTEGRATION_CONSUMER_DEAD_RETENTION":      "7d",
				"HEPHAESTUS_INTEGRATION_CONSUMER_HANDLER_TIMEOUT":     "10m",
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS": "4",
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_BASE_DELAY":   "1s",
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_DELAY":    "1m",
				"HEPHAESTUS_INTEGRATION_CONSUMER_LEASE_DURATION":      "90s",
				"HEPHAESTUS_INTEGRATION_CONSUMER_RENEW_INTERVAL":      "20s",
				"HEPHAESTUS_INTEGRATION_CONSUMER_REAPER_INTERVAL":     "15s",
				"HEPHAESTUS_INTEGRATION_CONSUMER_POLL_INTERVAL":       "2s",
				"HEPHAESTUS_INTEGRATION_CONSUMER_RETENTION_INTERVAL":  "30m",
				"HEPHAESTUS_REPLAY_MAX_RUNNING":                       "5",
				"HEPHAESTUS_REPLAY_MAX_ROWS":                          "25000",
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Embedded()).To(BeFalse())
			Expect(c.DatabaseURL).To(Equal("postgres://app@db.internal:5432/heph?sslmode=disable"))
			Expect(c.HTTPAddr).To(Equal("127.0.0.1:9090"))
			Expect(c.AdminToken).To(Equal("admin-secret-0123456789"))
			Expect(c.CredentialsKey).To(Equal(key32))
			Expect(c.WebhookMaxBytes).To(Equal(int64(1048576)))
			Expect(c.DataDir).To(Equal("/var/lib/hephaestus"))
			Expect(c.LogFormat).To(Equal("console"))
			Expect(c.LogLevel).To(Equal("debug"))
			Expect(c.ServerID).To(Equal("web-1"))
			Expect([]int64{c.ReplayMaxRunning, c.ReplayMaxRows}).To(Equal([]int64{5, 25000}))
			k := c.Consumer
			Expect([]any{k.Claimers, k.ReplayWindow, k.DeadRetention, k.HandlerTimeout, k.PoisonMaxAttempts,
				k.PoisonBaseDelay, k.PoisonMaxDelay, k.LeaseDuration, k.RenewInterval, k.ReaperInterval,
				k.PollInterval, k.RetentionInterval}).To(Equal([]any{3, 24 * time.Hour, 7 * 24 * time.Hour,
				10 * time.Minute, 4, time.Second, time.Minute, 90 * time.Second, 20 * time.Second,
				15 * time.Second, 2 * time.Second, 30 * time.Minute}))
			Expect(k.Retry.MaxAttempts()).To(Equal(4))
			Expect(k.Lease.Duration()).To(Equal(90 * time.Second))
		})
	})

	Describe("secure cookies", func() {
		DescribeTable("follow HEPHAESTUS_COOKIE_SECURE either way, else whether HEPHAESTUS_PUBLIC_URL is https",
			func(publicURL, setting string, secure bool) {
				c, err := load(env{"HEPHAESTUS_PUBLIC_URL": publicURL, "HEPHAESTUS_COOKIE_SECURE": setting})
				Expect(err).NotTo(HaveOccurred())
				Expect(c.SecureCookies).To(Equal(secure))
			},
			Entry("no public URL, no setting", "", "", false),
			Entry("an http public URL", "http://hx.example", "", false),
			Entry("an https public URL", "https://hx.example", "", true),
			Entry("an HTTPS public URL", "HTTPS://hx.example", "", true),
			Entry("the setting on", "http://hx.example", "true", true),
			Entry("the setting on, in capitals", "", "TRUE", true),
			Entry("the setting off wins over https", "https://hx.example", "false", false),
		)
	})

	Describe("durations", func() {
		DescribeTable("accept Go syntax and a day suffix",
			func(value string, want time.Duration) {
				c, err := load(env{"HEPHAESTUS_INTEGRATION_CONSUMER_REPLAY_WINDOW": value})
				Expect(err).NotTo(HaveOccurred())
				Expect(c.Consumer.ReplayWindow).To(Equal(want))
			},
			Entry("whole days", "3d", 72*time.Hour),
			Entry("fractional days", "1.5d", 36*time.Hour),
			Entry("Go seconds", "90s", 90*time.Second),
			Entry("Go hours", "72h", 72*time.Hour),
			Entry("Go compound", "1h30m", 90*time.Minute),
			Entry("surrounding blanks", " 2d ", 48*time.Hour),
		)
	})

	Describe("the credentials key", func() {
		DescribeTable("accepts the standard and URL base64 alphabets, padded or not",
			func(enc *base64.Encoding) {
				k := make([]byte, 32)
				for i := range k {
					k[i] = byte(250 + i) // bytes that encode to '+', '/', '-' or '_'
				}
				c, err := load(env{"HEPHAESTUS_CREDENTIALS_KEY": enc.EncodeToString(k)})
				Expect(err).NotTo(HaveOccurred())
				Expect(c.CredentialsKey).To(Equal(k))
			},
			Entry("standard", base64.StdEncoding),
			Entry("standard unpadded", base64.RawStdEncoding),
			Entry("URL", base64.URLEncoding),
			Entry("URL unpadded", base64.RawURLEncoding),
		)

		It("never repeats the key in an error", func() {
			short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
			_, err := load(env{"HEPHAESTUS_CREDENTIALS_KEY": short})
			Expect(err).To(MatchError(ContainSubstring("HEPHAESTUS_CREDENTIALS_KEY: decodes to 16 bytes, not 32")))
			Expect(err.Error()).NotTo(ContainSubstring(short))
		})
	})

	Describe("invalid values", func() {
		DescribeTable("stop the start with a message naming the variable and the problem",
			func(name, value string, message any) {
				_, err := load(env{name: value})
				Expect(err).To(HaveOccurred())
				ps := problems(err)
				Expect(ps).To(HaveLen(1))
				Expect(ps[0].Variable).To(Equal(name))
				Expect(err.Error()).To(HavePrefix(name + ": "))
				if m, ok := message.(string); ok {
					Expect(err.Error()).To(Equal(name + ": " + m))
				} else {
					Expect(ps[0].Message).To(message.(types.GomegaMatcher))
				}
			},
			Entry(nil, "DATABASE_URL", "postgres://a b@:x", ContainSubstring("is not a PostgreSQL connection string")),
			Entry(nil, "HEPHAESTUS_HTTP_ADDR", "8080", `"8080" is not a listen address like :8080 or 127.0.0.1:8080`),
			Entry(nil, "HEPHAESTUS_HTTP_ADDR", ":99999", `":99999" has no valid port (0-65535)`),
			Entry(nil, "HEPHAESTUS_CREDENTIALS_KEY", "not base64!", "is not base64 (standard or URL alphabet) of 32 bytes"),
			Entry(nil, "HEPHAESTUS_ADMIN_TOKEN", "changeme", "is shorter than 16 characters"),
			Entry(nil, "HEPHAESTUS_PUBLIC_URL", "hx.example", "is not an absolute http(s) URL without credentials"),
			Entry(nil, "HEPHAESTUS_TRACE_URL", "tempo.example/trace/{traceId}", "is not an absolute http(s) URL without credentials"),
			Entry(nil, "HEPHAESTUS_TRACE_URL", "https://tempo.example/trace/", "does not name the trace id as {traceId}"),
			Entry(nil, "HEPHAESTUS_COOKIE_SECURE", "yes", `"yes" is not one of true, false`),
			Entry(nil, "HEPHAESTUS_WEBHOOK_MAX_BYTES", "25MiB", `"25MiB" is not a whole number ≥ 1`),
			Entry(nil, "HEPHAESTUS_WEBHOOK_MAX_BYTES", "0", `"0" is not a whole number ≥ 1`),
			Entry(nil, "HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES", "64MiB", `"64MiB" is not a whole number between 32768 and 1099511627776`),
			Entry(nil, "HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES", "1024", `"1024" is not a whole number between 32768 and 1099511627776`),
			Entry(nil, "HEPHAESTUS_ADMISSION_LOCK_TIMEOUT", "soon", ContainSubstring("is not a duration")),
			Entry(nil, "HEPHAESTUS_ADMISSION_LOCK_TIMEOUT", "0s", `"0s" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_SHUTDOWN_TIMEOUT", "-5s", `"-5s" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_LOG_FORMAT", "xml", `"xml" is not one of json, console`),
			Entry(nil, "HEPHAESTUS_LOG_LEVEL", "loud", `"loud" is not a log level (debug, info, warn, error)`),
			Entry(nil, "HEPHAESTUS_SERVER_ID", strings.Repeat("s", 201), "is longer than 200 characters"),
			Entry(nil, "HEPHAESTUS_ACCESS_RECHECK_INTERVAL", "daily", ContainSubstring(`"daily"`)),
			Entry(nil, "HEPHAESTUS_ACCESS_RECHECK_INTERVAL", "-1h", `"-1h" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_CHANGES_RETENTION", "a week", ContainSubstring(`"a week"`)),
			Entry(nil, "HEPHAESTUS_CHANGES_RETENTION", "0d", `"0d" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_CHANGES_STREAM_MAX", "forever", ContainSubstring(`"forever"`)),
			Entry(nil, "HEPHAESTUS_OPERATOR_READ_CONNECTIONS", "0", `"0" is not a whole number between 1 and 64`),
			Entry(nil, "HEPHAESTUS_OPERATOR_READ_CONNECTIONS", "1000", `"1000" is not a whole number between 1 and 64`),
			Entry(nil, "HEPHAESTUS_OPERATOR_READ_TIMEOUT", "0s", `"0s" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_OPERATOR_READS_PER_ACCOUNT", "none", `"none" is not a whole number between 1 and 64`),
			Entry(nil, "HEPHAESTUS_CHANGES_STREAM_MAX", "-1m", `"-1m" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_CHANGES_STREAM_MAX", "30s", "30s is shorter than 1m0s"),
			Entry(nil, "HEPHAESTUS_REPLAY_MAX_RUNNING", "0", `"0" is not a whole number between 1 and 1000`),
			Entry(nil, "HEPHAESTUS_REPLAY_MAX_RUNNING", "two", `"two" is not a whole number between 1 and 1000`),
			Entry(nil, "HEPHAESTUS_REPLAY_MAX_ROWS", "-1", `"-1" is not a whole number between 1 and 10000000`),
			Entry(nil, "HEPHAESTUS_REPLAY_MAX_ROWS", "1e5", `"1e5" is not a whole number between 1 and 10000000`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS", "0", `"0" is not a whole number between 1 and 256`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS", "8000", `"8000" is not a whole number between 1 and 256`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_REPLAY_WINDOW", "3 days", `"3 days" is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_DEAD_RETENTION", "-1d", `"-1d" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_DEAD_RETENTION", "999999999d", `"999999999d" is too long for a duration`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_HANDLER_TIMEOUT", "0s", `"0s" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS", "zero", `"zero" is not a whole number ≥ 1`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS", "-3", `"-3" is not a whole number ≥ 1`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_POISON_BASE_DELAY", "2", `"2" is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_DELAY", "5 min", `"5 min" is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_LEASE_DURATION", "0", `"0" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_RENEW_INTERVAL", "often", `"often" is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_REAPER_INTERVAL", "-30s", `"-30s" is not a positive duration`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_POLL_INTERVAL", "5x", `"5x" is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)`),
			Entry(nil, "HEPHAESTUS_INTEGRATION_CONSUMER_RETENTION_INTERVAL", "NaNd", `"NaNd" is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)`),
		)

		Describe("a multi-host DATABASE_URL (a high-availability formation)", func() {
			It("is accepted with target_session_attrs=read-write or primary", func() {
				for _, u := range []string{
					"postgres://app:pw@db1:5432,db2:5432/heph?target_session_attrs=read-write&sslmode=disable",
					"postgres://app:pw@db1,db2:6432/heph?target_session_attrs=primary",
					"host=db1,db2 port=5432,5433 user=app dbname=heph target_session_attrs=read-write",
				} {
					c, err := load(env{"DATABASE_URL": u})
					Expect(err).NotTo(HaveOccurred(), u)
					Expect(c.DatabaseURL).To(Equal(u))
				}
			})

			It("is refused at start when a session could land on a standby, naming DATABASE_URL and the hosts", func() {
				for _, u := range []string{
					"postgres://app:hunter2@db1:5432,db2:5432/heph?sslmode=disable",
					"postgres://app:hunter2@db1:5432,db2:5432/heph?target_session_attrs=any",
					"postgres://app:hunter2@db1,db2/heph?target_session_attrs=prefer-standby",
					"host=db1,db2 user=app password=hunter2 dbname=heph target_session_attrs=read-only",
				} {
					_, err := load(env{"DATABASE_URL": u})
					Expect(err).To(HaveOccurred(), u)
					ps := problems(err)
					Expect(ps).To(HaveLen(1))
					Expect(ps[0].Variable).To(Equal("DATABASE_URL"))
					Expect(ps[0].Message).To(HavePrefix("names 2 hosts (db1:5432, db2:"))
					Expect(ps[0].Message).To(ContainSubstring("without target_session_attrs=read-write (or primary)"))
					Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
				}
			})

			It("leaves a single host alone, whatever its target_session_attrs", func() {
				for _, u := range []string{
					"postgres://app@db.internal:5432/heph?sslmode=prefer",
					"postgres://app@db.internal/heph?target_session_attrs=any",
				} {
					_, err := load(env{"DATABASE_URL": u})
					Expect(err).NotTo(HaveOccurred(), u)
				}
			})
		})

		It("never repeats a database password", func() {
			_, err := load(env{"DATABASE_URL": "postgres://app:hunter2@db:port/heph"})
			Expect(err).To(MatchError(HavePrefix("DATABASE_URL: ")))
			Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})

		It("reports every invalid variable, not only the first", func() {
			_, err := load(env{
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS": "zero",
				"HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS":            "many",
				"HEPHAESTUS_LOG_FORMAT":                               "xml",
			})
			vars := []string{}
			for _, p := range problems(err) {
				vars = append(vars, p.Variable)
			}
			Expect(vars).To(ConsistOf("HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_ATTEMPTS",
				"HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS", "HEPHAESTUS_LOG_FORMAT"))
			Expect(strings.Split(err.Error(), "\n")).To(HaveLen(3))
		})
	})

	Describe("cross-checks of the domain rules", func() {
		It("refuses a renewal that is not shorter than the lease, naming both variables", func() {
			_, err := load(env{
				"HEPHAESTUS_INTEGRATION_CONSUMER_LEASE_DURATION": "30s",
				"HEPHAESTUS_INTEGRATION_CONSUMER_RENEW_INTERVAL": "30s",
			})
			ps := problems(err)
			Expect(ps).To(HaveLen(1))
			Expect(ps[0].Variable).To(Equal("HEPHAESTUS_INTEGRATION_CONSUMER_RENEW_INTERVAL"))
			Expect(ps[0].Message).To(ContainSubstring("HEPHAESTUS_INTEGRATION_CONSUMER_LEASE_DURATION"))
			Expect(ps[0].Message).To(ContainSubstring("renew interval must be positive and shorter than the lease"))
		})

		It("refuses a max delay below the base delay, naming both variables", func() {
			_, err := load(env{
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_BASE_DELAY": "10m",
			})
			ps := problems(err)
			Expect(ps).To(HaveLen(1))
			Expect(ps[0].Variable).To(Equal("HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_DELAY"))
			Expect(ps[0].Message).To(ContainSubstring("HEPHAESTUS_INTEGRATION_CONSUMER_POISON_BASE_DELAY"))
			Expect(ps[0].Message).To(ContainSubstring("max delay must not be below the base delay"))
		})

		It("accepts a max delay equal to the base delay", func() {
			_, err := load(env{
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_BASE_DELAY": "1m",
				"HEPHAESTUS_INTEGRATION_CONSUMER_POISON_MAX_DELAY":  "1m",
			})
			Expect(err).NotTo(HaveOccurred())
		})

		It("does not repeat a variable already reported as invalid", func() {
			_, err := load(env{"HEPHAESTUS_INTEGRATION_CONSUMER_LEASE_DURATION": "soon"})
			Expect(problems(err)).To(HaveLen(1))
		})
	})
})
