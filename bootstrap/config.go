// Package bootstrap reads the configuration, composes the service with Wire and owns the
// process lifecycle (database, HTTP server, claimers, shutdown order).
package bootstrap

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap/zapcore"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodule"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Environment variables of CONTRACT.md's Configuration table, plus the operational ones.
const (
	EnvDatabaseURL         = "DATABASE_URL"
	EnvHTTPAddr            = "HEPHAESTUS_HTTP_ADDR"
	EnvAdminToken          = "HEPHAESTUS_ADMIN_TOKEN"
	EnvCredentialsKey      = "HEPHAESTUS_CREDENTIALS_KEY"
	EnvGitHubAppID         = "HEPHAESTUS_GITHUB_APP_ID"
	EnvGitHubWebhookSecret = "HEPHAESTUS_GITHUB_WEBHOOK_SECRET"
	EnvSlackSigningSecret  = "HEPHAESTUS_SLACK_SIGNING_SECRET"
	// Optional provider API access (not in CONTRACT.md's table): without a token the handlers
	// mirror what the payloads carry and send no Slack notices or App Home views. GitLab has no
	// default API URL: its reads need both the URL and the token.
	EnvGitHubAPIURL = "HEPHAESTUS_GITHUB_API_URL"
	// EnvGitHubAPIToken and EnvGitLabAPIToken were instance-wide tokens of provider reads.
	// They are no longer used (a read for a workspace uses its own connection's credential,
	// CONTRACT.md "Provider access"); a server that finds one set says so at start.
	EnvGitHubAPIToken = "HEPHAESTUS_GITHUB_API_TOKEN"
	// EnvGitHubAppPrivateKey is the App's PEM private key; EnvGitHubAppPrivateKeyFile names a
	// file holding it (owner-only mode, like the other secret files).
	EnvGitHubAppPrivateKey     = "HEPHAESTUS_GITHUB_APP_PRIVATE_KEY"
	EnvGitHubAppPrivateKeyFile = "HEPHAESTUS_GITHUB_APP_PRIVATE_KEY_FILE"
	EnvGitLabAPIURL            = "HEPHAESTUS_GITLAB_API_URL"
	EnvGitLabAPIToken          = "HEPHAESTUS_GITLAB_API_TOKEN"
	EnvSlackAPIURL             = "HEPHAESTUS_SLACK_API_URL"
	// EnvOutlineAPIURL is the one Outline instance whose API the server may call (its API
	// root, https://app.getoutline.com/api); unset: no Outline backfill. Only connections whose
	// sourceServerUrl is on that instance are backfilled, with their own API token.
	EnvOutlineAPIURL   = "HEPHAESTUS_OUTLINE_API_URL"
	EnvSlackBotToken   = "HEPHAESTUS_SLACK_BOT_TOKEN"
	EnvWebhookMaxBytes = "HEPHAESTUS_WEBHOOK_MAX_BYTES"
	// Limits of the edge (CONTRACT.md "Later additions").
	EnvWebhookInflightBytes = "HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES"
	EnvAdmissionLockTimeout = "HEPHAESTUS_ADMISSION_LOCK_TIMEOUT"
	EnvShutdownTimeout      = "HEPHAESTUS_SHUTDOWN_TIMEOUT"
	EnvDataDir              = "HEPHAESTUS_DATA_DIR"
	EnvLogFormat            = "HEPHAESTUS_LOG_FORMAT"
	EnvLogLevel             = "HEPHAESTUS_LOG_LEVEL"
	EnvServerID             = "HEPHAESTUS_SERVER_ID"
	// EnvAccessRecheckInterval is how often subscriptions vouched for by a connection's own
	// token (GitHub PAT) are checked again with the provider (one server runs it).
	EnvAccessRecheckInterval = "HEPHAESTUS_ACCESS_RECHECK_INTERVAL"
	// EnvChangesRetention is how long the change feed keeps a change (CONTRACT.md "Change
	// feed"; one server deletes older ones).
	EnvChangesRetention = "HEPHAESTUS_CHANGES_RETENTION"
	// EnvChangesStreamMax is the longest a change feed SSE stream lasts before the client
	// resumes with Last-Event-ID (CONTRACT.md "Change feed").
	EnvChangesStreamMax = "HEPHAESTUS_CHANGES_STREAM_MAX"
	// EnvRejectionsRetention is how long the rejection log keeps a minute (CONTRACT.md
	// "Operator API"; default 7d).
	EnvRejectionsRetention = "HEPHAESTUS_REJECTIONS_RETENTION"
	// EnvReplayMaxRunning and EnvReplayMaxRows bound a workspace's bulk replays (CONTRACT.md
	// "Operator API"): RUNNING jobs at once, and matched rows per job; past either a start is
	// 409 replay-limit.
	EnvReplayMaxRunning = "HEPHAESTUS_REPLAY_MAX_RUNNING"
	EnvReplayMaxRows    = "HEPHAESTUS_REPLAY_MAX_ROWS"
	// EnvOperatorReadConnections is the size of the operator reads' own pool (the deliveries
	// browser, dead-letter lists, rejections, inbox counts; API and console), apart from the
	// claimers' and admission's connections.
	EnvOperatorReadConnections = "HEPHAESTUS_OPERATOR_READ_CONNECTIONS"
	// EnvOperatorReadTimeout is the statement timeout of that pool: a read past it is 503 retry.
	EnvOperatorReadTimeout = "HEPHAESTUS_OPERATOR_READ_TIMEOUT"
	// EnvOperatorReadsPerAccount is how many operator reads one account has in flight on one
	// server; one more is 429 retry.
	EnvOperatorReadsPerAccount = "HEPHAESTUS_OPERATOR_READS_PER_ACCOUNT"
	// EnvGitHubRedeliveryInterval is the redelivery reconciler's period (with App
	// authentication only).
	EnvGitHubRedeliveryInterval = "HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL"
	// Install flows (CONTRACT.md "Install flows"): the GitHub flow needs the App slug and its
	// OAuth client id and secret, the Slack flow the Slack app's client id and secret.
	EnvGitHubOAuthURL     = "HEPHAESTUS_GITHUB_OAUTH_URL"
	EnvGitHubAppSlug      = "HEPHAESTUS_GITHUB_APP_SLUG"
	EnvGitHubClientID     = "HEPHAESTUS_GITHUB_CLIENT_ID"
	EnvGitHubClientSecret = "HEPHAESTUS_GITHUB_CLIENT_SECRET"
	EnvSlackClientID      = "HEPHAESTUS_SLACK_CLIENT_ID"
	EnvSlackClientSecret  = "HEPHAESTUS_SLACK_CLIENT_SECRET"
	EnvPublicURL          = "HEPHAESTUS_PUBLIC_URL"
	// EnvTraceURL is the operator's trace link template: an http(s) URL holding {traceId}
	// (a Grafana Tempo or Jaeger trace page); the console's delivery page links to it.
	EnvTraceURL = "HEPHAESTUS_TRACE_URL"
	// EnvCookieSecure marks every console and install cookie Secure ("true") or leaves that to
	// the request ("false": Secure only on a connection the server terminates TLS for); unset,
	// cookies are Secure when HEPHAESTUS_PUBLIC_URL is https (a TLS proxy in front).
	EnvCookieSecure = "HEPHAESTUS_COOKIE_SECURE"

	envConsumer          = "HEPHAESTUS_INTEGRATION_CONSUMER_"
	EnvClaimers          = envConsumer + "CLAIMERS"
	EnvReplayWindow      = envConsumer + "REPLAY_WINDOW"
	EnvDeadRetention     = envConsumer + "DEAD_RETENTION"
	EnvHandlerTimeout    = envConsumer + "HANDLER_TIMEOUT"
	EnvPoisonMaxAttempts = envConsumer + "POISON_MAX_ATTEMPTS"
	EnvPoisonBaseDelay   = envConsumer + "POISON_BASE_DELAY"
	EnvPoisonMaxDelay    = envConsumer + "POISON_MAX_DELAY"
	EnvLeaseDuration     = envConsumer + "LEASE_DURATION"
	EnvRenewInterval     = envConsumer + "RENEW_INTERVAL"
	EnvReaperInterval    = envConsumer + "REAPER_INTERVAL"
	EnvPollInterval      = envConsumer + "POLL_INTERVAL"
	EnvRetentionInterval = envConsumer + "RETENTION_INTERVAL"
)

// Defaults (CONTRACT.md). They live here and nowhere else.
const (
	DefaultHTTPAddr        = ":8080"
	DefaultGitHubAPIURL    = "https://api.github.com"
	DefaultSlackAPIURL     = "https://slack.com/api/"
	DefaultWebhookMaxBytes = 26214400 // 25 MiB: GitHub's own payload cap
	// DefaultWebhookInflightBytes is webhookapi.DefaultInflightBytes (64 MiB; the reasoning
	// for a 2-core, 1 GiB container is there).
	DefaultWebhookInflightBytes = 64 << 20
	DefaultAdmissionLockTimeout = 2 * time.Second
	DefaultShutdownTimeout      = 25 * time.Second
	DefaultDataDir              = "./.data"
	DefaultLogFormat            = "json"
	DefaultLogLevel             = "info"
	DefaultClaimers             = 8
	DefaultReplayWindow         = 3 * 24 * time.Hour
	DefaultDeadRetention        = 30 * 24 * time.Hour
	DefaultHandlerTimeout       = 30 * time.Minute
	DefaultPoisonMaxAttempts    = 10
	DefaultPoisonBaseDelay      = 2 * time.Second
	DefaultPoisonMaxDelay       = 5 * time.Minute
	DefaultLeaseDuration        = 2 * time.Minute
	DefaultRenewInterval        = 30 * time.Second
	DefaultReaperInterval       = 30 * time.Second
	DefaultPollInterval         = 5 * time.Second
	DefaultRetentionInterval    = time.Hour
	DefaultAccessRecheck        = 24 * time.Hour
	DefaultChangesRetention     = 7 * 24 * time.Hour
	DefaultChangesStreamMax     = 15 * time.Minute
	DefaultRejectionsRetention  = 7 * 24 * time.Hour
	DefaultReplayMaxRunning     = 2
	DefaultReplayMaxRows        = 100000
	DefaultOperatorReadConns    = 4
	DefaultOperatorReadTimeout  = 5 * time.Second
	DefaultOperatorReadsPerAcct = 2
	DefaultGitHubRedelivery     = 10 * time.Minute
	DefaultGitHubOAuthURL       = "https://github.com"

	// MaxClaimers bounds the claimers of one server: each may hold a pooled connection, and the
	// pool is sized from them, so a typo like 8000 would exhaust PostgreSQL's max_connections.
	MaxClaimers = 256
	// MaxReplayMaxRunning and MaxReplayMaxRows bound the bulk replay limits: each RUNNING job
	// takes a runner's turn and each matched row a replay_job_row written in one transaction,
	// so a typo like 100000 jobs or 10^12 rows would switch the limits off.
	MaxReplayMaxRunning = 1000
	MaxReplayMaxRows    = 10000000
	// MaxOperatorReadConns bounds the operator reads' pool (and the reads per account): a
	// typo must not exhaust PostgreSQL's max_connections.
	MaxOperatorReadConns = 64
	// CredentialsKeySize is the AES-256 key size of HEPHAESTUS_CREDENTIALS_KEY.
	CredentialsKeySize = 32
)

// Config is the whole configuration of a server process, read once at start by LoadConfig.
type Config struct {
	// DatabaseURL is empty in embedded mode (see Embedded).
	DatabaseURL string
	HTTPAddr    string
	// AdminToken is empty when unset; in embedded mode App fills it from the data dir.
	AdminToken string
	// CredentialsKey is nil when unset; in embedded mode App fills it from the data dir. It is
	// the sealing (first) key of CredentialsKeys.
	CredentialsKey []byte
	// CredentialsKeys are all keys of HEPHAESTUS_CREDENTIALS_KEY (`id:base64,…`, or one base64
	// key named secrets.DefaultKeyID): the first seals, all open.
	CredentialsKeys     []secrets.Key
	GitHubAppID         int64 // 0 when unset
	GitHubWebhookSecret string
	SlackSigningSecret  string
	GitHubAPIURL        string // REST root; GitHub Enterprise Server: https://<host>/api/v3
	// IgnoredVariables names the retired variables that are set (EnvGitHubAPIToken,
	// EnvGitLabAPIToken): nothing reads them, and the server warns once at start.
	IgnoredVariables []string
	// GitHubAppPrivateKey is the App's PEM private key (validated at load); empty: no App
	// authentication, only PAT workspaces read GitHub.
	GitHubAppPrivateKey string
	// GitHubRedeliveryInterval is the redelivery reconciler's period (App authentication only).
	GitHubRedeliveryInterval time.Duration
	GitLabAPIURL             string // REST root, https://<host>/api/v4; empty: no provider reads
	SlackAPIURL              string
	OutlineAPIURL            string // API root of the one Outline instance backfilled; empty: none
	SlackBotToken            string // empty: no Web API calls
	GitHubOAuthURL           string // GitHub web and OAuth root of the install flow
	GitHubAppSlug            string // empty: no GitHub install flow
	GitHubClientID           string // the App's OAuth client id; empty: no GitHub install flow
	GitHubClientSecret       string
	SlackClientID            string // empty: no Slack install flow
	SlackClientSecret        string
	PublicURL                string // external base URL; empty: Slack links send no redirect_uri
	TraceURL                 string // trace link template with {traceId}; empty: no link
	// SecureCookies marks every console and install cookie Secure, also on a plain-HTTP request
	// behind a TLS proxy: EnvCookieSecure, else whether PublicURL is https. False: cookies are
	// Secure only when the server terminates the request's TLS itself.
	SecureCookies   bool
	WebhookMaxBytes int64
	// WebhookInflightBytes bounds the body bytes all webhook requests hold at once.
	WebhookInflightBytes int64
	// AdmissionLockTimeout ends an admission's wait for a lifecycle lock (503 retry).
	AdmissionLockTimeout time.Duration
	// ShutdownTimeout bounds the whole stop, from the signal to the last lease released.
	ShutdownTimeout time.Duration
	DataDir         string
	LogFormat       string // "json" or "console"
	LogLevel        string // a zap level name
	ServerID        string
	Consumer        ConsumerConfig

	// AccessRecheckInterval is the period of the PAT access recheck.
	AccessRecheckInterval time.Duration
	// ChangesRetention is how long the change feed keeps a change.
	ChangesRetention time.Duration
	// ChangesStreamMax is the longest a change feed stream lasts.
	ChangesStreamMax time.Duration
	// RejectionsRetention is how long the rejection log keeps a minute.
	RejectionsRetention time.Duration
	// ReplayMaxRunning is the most RUNNING bulk replay jobs of one workspace.
	ReplayMaxRunning int64
	// ReplayMaxRows is the most rows one bulk replay job may match.
	ReplayMaxRows int64
	// OperatorReadConnections is the operator reads' pool size (MaxConns), OperatorReadTimeout
	// its sessions' statement_timeout, OperatorReadsPerAccount the reads one account may have in
	// flight on this server.
	OperatorReadConnections int
	OperatorReadTimeout     time.Duration
	OperatorReadsPerAccount int

	// Tracing: the OTEL_* variables ask for exported OTLP traces (telemetry.TracingEnabled).
	Tracing bool
	// TracingProtocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL
	// ("grpc", or HTTP/protobuf).
	TracingProtocol string
	// SpanExporter, when set (specs: the SDK's in-memory exporter), receives the spans instead
	// of the OTLP exporter, through the same batching provider; it is never read from the
	// environment.
	SpanExporter sdktrace.SpanExporter
}

// ConsumerConfig is the claimers' configuration. Retry and Lease are the validated domain
// values built from the raw durations beside them.
type ConsumerConfig struct {
	Claimers          int
	ReplayWindow      time.Duration
	DeadRetention     time.Duration
	HandlerTimeout    time.Duration
	PoisonMaxAttempts int
	PoisonBaseDelay   time.Duration
	PoisonMaxDelay    time.Duration
	LeaseDuration     time.Duration
	RenewInterval     time.Duration
	ReaperInterval    time.Duration
	PollInterval      time.Duration
	RetentionInterval time.Duration

	Retry inbox.RetryPolicy
	Lease inbox.LeaseTiming
}

// Embedded reports whether the server runs its own PostgreSQL cluster (DATABASE_URL unset).
func (c Config) Embedded() bool { return c.DatabaseURL == "" }

// Problem is one invalid variable.
type Problem struct {
	Variable string
	Message  string // what is wrong with the value; never the value of a secret
}

func (p Problem) String() string { return p.Variable + ": " + p.Message }

// ConfigError lists every invalid variable, so an operator fixes them all in one go.
type ConfigError struct {
	Problems []Problem
}

// Error is one line per problem.
func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// LoadConfig reads every variable through getenv (os.Getenv in production), applies the
// defaults and validates. A *ConfigError lists all problems, not only the first.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := reader{getenv: getenv}
	c := Config{
		Tracing:             telemetry.TracingEnabled(getenv),
		TracingProtocol:     cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL")),
		DatabaseURL:         r.databaseURL(),
		HTTPAddr:            r.addr(EnvHTTPAddr, DefaultHTTPAddr),
		AdminToken:          r.adminToken(),
		GitHubAppID:         r.gitHubAppID(),
		GitHubWebhookSecret: r.secret(EnvGitHubWebhookSecret),
		SlackSigningSecret:  r.secret(EnvSlackSigningSecret),
		GitHubAPIURL:        r.httpURL(EnvGitHubAPIURL, DefaultGitHubAPIURL),
		GitLabAPIURL:        r.httpURL(EnvGitLabAPIURL, ""),
		SlackAPIURL:         r.httpURL(EnvSlackAPIURL, DefaultSlackAPIURL),
		OutlineAPIURL:       r.apiRoot(EnvOutlineAPIURL),
		SlackBotToken:       r.secret(EnvSlackBotToken),
		GitHubOAuthURL:      r.httpURL(EnvGitHubOAuthURL, DefaultGitHubOAuthURL),
		GitHubAppSlug:       r.text(EnvGitHubAppSlug, ""),
		GitHubClientID:      r.text(EnvGitHubClientID, ""),
		GitHubClientSecret:  r.secret(EnvGitHubClientSecret),
		SlackClientID:       r.text(EnvSlackClientID, ""),
		SlackClientSecret:   r.secret(EnvSlackClientSecret),
		PublicURL:           r.httpURL(EnvPublicURL, ""),
		TraceURL:            r.traceURL(EnvTraceURL),
		WebhookMaxBytes:     r.wholeNumber(EnvWebhookMaxBytes, DefaultWebhookMaxBytes, 1, 0),
		// At least one 32 KiB first read; 1 TiB is far past any machine this runs on.
		WebhookInflightBytes: r.wholeNumber(EnvWebhookInflightBytes, DefaultWebhookInflightBytes, 32<<10, 1<<40),
		AdmissionLockTimeout: r.duration(EnvAdmissionLockTimeout, DefaultAdmissionLockTimeout),
		ShutdownTimeout:      r.duration(EnvShutdownTimeout, DefaultShutdownTimeout),
		DataDir:              r.text(EnvDataDir, DefaultDataDir),
		LogFormat:            r.oneOf(EnvLogFormat, DefaultLogFormat, "json", "console"),
		LogLevel:             r.logLevel(),
		ServerID:             r.serverID(),
		Consumer: ConsumerConfig{
			Claimers:          int(r.wholeNumber(EnvClaimers, DefaultClaimers, 1, MaxClaimers)),
			ReplayWindow:      r.duration(EnvReplayWindow, DefaultReplayWindow),
			DeadRetention:     r.duration(EnvDeadRetention, DefaultDeadRetention),
			HandlerTimeout:    r.duration(EnvHandlerTimeout, DefaultHandlerTimeout),
			PoisonMaxAttempts: int(r.wholeNumber(EnvPoisonMaxAttempts, DefaultPoisonMaxAttempts, 1, 0)),
			PoisonBaseDelay:   r.duration(EnvPoisonBaseDelay, DefaultPoisonBaseDelay),
			PoisonMaxDelay:    r.duration(EnvPoisonMaxDelay, DefaultPoisonMaxDelay),
			LeaseDuration:     r.duration(EnvLeaseDuration, DefaultLeaseDuration),
			RenewInterval:     r.duration(EnvRenewInterval, DefaultRenewInterval),
			ReaperInterval:    r.duration(EnvReaperInterval, DefaultReaperInterval),
			PollInterval:      r.duration(EnvPollInterval, DefaultPollInterval),
			RetentionInterval: r.duration(EnvRetentionInterval, DefaultRetentionInterval),
		},
	}
	c.SecureCookies = r.secureCookies(c.PublicURL)
	c.CredentialsKeys = r.credentialsKeys()
	if len(c.CredentialsKeys) > 0 {
		c.CredentialsKey = c.CredentialsKeys[0].Secret
	}
	c.AccessRecheckInterval = r.duration(EnvAccessRecheckInterval, DefaultAccessRecheck)
	c.GitHubAppPrivateKey = r.gitHubAppKey(c.GitHubAppID)
	c.ChangesRetention = r.duration(EnvChangesRetention, DefaultChangesRetention)
	c.ChangesStreamMax = r.duration(EnvChangesStreamMax, DefaultChangesStreamMax)
	if c.ChangesStreamMax < MinChangesStreamMax && !r.invalid[EnvChangesStreamMax] {
		r.fail(EnvChangesStreamMax, "%s is shorter than %s", c.ChangesStreamMax, MinChangesStreamMax)
	}
	c.RejectionsRetention = r.duration(EnvRejectionsRetention, DefaultRejectionsRetention)
	c.ReplayMaxRunning = r.wholeNumber(EnvReplayMaxRunning, DefaultReplayMaxRunning, 1, MaxReplayMaxRunning)
	c.ReplayMaxRows = r.wholeNumber(EnvReplayMaxRows, DefaultReplayMaxRows, 1, MaxReplayMaxRows)
	c.OperatorReadConnections = int(r.wholeNumber(EnvOperatorReadConnections, DefaultOperatorReadConns, 1, MaxOperatorReadConns))
	c.OperatorReadTimeout = r.duration(EnvOperatorReadTimeout, DefaultOperatorReadTimeout)
	c.OperatorReadsPerAccount = int(r.wholeNumber(EnvOperatorReadsPerAccount, DefaultOperatorReadsPerAcct, 1, MaxOperatorReadConns))
	c.GitHubRedeliveryInterval = r.duration(EnvGitHubRedeliveryInterval, DefaultGitHubRedelivery)
	for _, name := range []string{EnvGitHubAPIToken, EnvGitLabAPIToken} {
		if r.secret(name) != "" {
			c.IgnoredVariables = append(c.IgnoredVariables, name)
		}
	}
	r.crossCheck(&c.Consumer)
	r.refuseDevelopmentSecrets(c)
	r.installFlows(c)
	if len(r.problems) > 0 {
		return Config{}, &ConfigError{Problems: r.problems}
	}
	return c, nil
}

// reader collects problems while reading, so one pass reports every invalid variable.
type reader struct {
	getenv   func(string) string
	problems []Problem
	invalid  map[string]bool // variables already reported: cross-checks skip them
}

func (r *reader) fail(name, format string, args ...any) {
	r.problems = append(r.problems, Problem{Variable: name, Message: fmt.Sprintf(format, args...)})
	if r.invalid == nil {
		r.invalid = map[string]bool{}
	}
	r.invalid[name] = true
}

// get returns the trimmed value and whether the variable is set to something non-blank.
func (r *reader) get(name string) (string, bool) {
	v := strings.TrimSpace(r.getenv(name))
	return v, v != ""
}

func (r *reader) text(name, def string) string {
	if v, ok := r.get(name); ok {
		return v
	}
	return def
}

// secret returns the value exactly as given: a secret's bytes are the provider's to choose,
// and trimming would silently change an HMAC key.
func (r *reader) secret(name string) string { return r.getenv(name) }

// httpURL reads an absolute http(s) URL without credentials (it is logged and used as a base).
func (r *reader) httpURL(name, def string) string {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		r.fail(name, "is not an absolute http(s) URL without credentials")
		return def
	}
	return v
}

// traceURL is an http(s) URL template that names the trace id as {traceId}, or "".
func (r *reader) traceURL(name string) string {
	v := r.httpURL(name, "")
	if v == "" || r.invalid[name] {
		return ""
	}
	if !strings.Contains(v, "{traceId}") {
		r.fail(name, "does not name the trace id as {traceId}")
		return ""
	}
	return v
}

// apiRoot is httpURL without a default, and without a query or fragment either: the value is
// the base every API path is appended to.
func (r *reader) apiRoot(name string) string {
	v := r.httpURL(name, "")
	if v == "" || r.invalid[name] {
		return ""
	}
	if u, err := url.Parse(v); err != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		r.fail(name, "is not an absolute http(s) URL without credentials, query or fragment")
		return ""
	}
	return v
}

func (r *reader) databaseURL() string {
	v, ok := r.get(EnvDatabaseURL)
	if !ok {
		return ""
	}
	// pgconn's error redacts the password; the value itself is never echoed.
	pc, err := pgconn.ParseConfig(v)
	if err != nil {
		r.fail(EnvDatabaseURL, "is not a PostgreSQL connection string (%v)", err)
		return v
	}
	if hosts := databaseHosts(pc); len(hosts) > 1 && !writableOnly(pc) {
		r.fail(EnvDatabaseURL, "names %d hosts (%s) without target_session_attrs=read-write (or primary): "+
			"a connection could reach a standby or a demoted primary and every write would fail; add "+
			"target_session_attrs=read-write (docs/operations/database-failover.md)", len(hosts), strings.Join(hosts, ", "))
	}
	return v
}

// databaseHosts lists the distinct host:port pairs a connection string names (a multi-host URL
// of a high-availability formation names each node). pgconn lists a host twice when sslmode
// lets it retry without TLS, so duplicates are dropped.
func databaseHosts(pc *pgconn.Config) []string {
	seen := map[string]bool{}
	var hosts []string
	add := func(host string, port uint16) {
		hp := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if !seen[hp] {
			seen[hp] = true
			hosts = append(hosts, hp)
		}
	}
	add(pc.Host, pc.Port)
	for _, f := range pc.Fallbacks {
		add(f.Host, f.Port)
	}
	return hosts
}

// writableOnly reports whether the connection string accepts only a session that can write:
// target_session_attrs=read-write or primary (from the URL or PGTARGETSESSIONATTRS).
func writableOnly(pc *pgconn.Config) bool {
	if pc.ValidateConnect == nil {
		return false
	}
	got := reflect.ValueOf(pc.ValidateConnect).Pointer()
	return got == reflect.ValueOf(pgconn.ValidateConnectTargetSessionAttrsReadWrite).Pointer() ||
		got == reflect.ValueOf(pgconn.ValidateConnectTargetSessionAttrsPrimary).Pointer()
}

func (r *reader) addr(name, def string) string {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		r.fail(name, "%q is not a listen address like :8080 or 127.0.0.1:8080", v)
		return def
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		r.fail(name, "%q has no valid port (0-65535)", v)
		return def
	}
	return v
}

func (r *reader) credentialsKeys() []secrets.Key {
	v, ok := r.get(EnvCredentialsKey)
	if !ok {
		return nil
	}
	keys, err := secrets.ParseKeys(v, decodeCredentialsKey)
	if err != nil {
		r.fail(EnvCredentialsKey, "%v", err)
		return nil
	}
	return keys
}

func (r *reader) adminToken() string {
	v := r.secret(EnvAdminToken)
	if v != "" && len(v) < minAdminTokenLength {
		// The length only: the value is a secret.
		r.fail(EnvAdminToken, "is shorter than %d characters", minAdminTokenLength)
		return ""
	}
	return v
}

// gitHubAppKey reads the App's private key from the variable or the file it names (not both),
// refuses a file that others may read, and checks that it parses; messages never show key
// material.
func (r *reader) gitHubAppKey(appID int64) string {
	_, inline := r.get(EnvGitHubAppPrivateKey)
	pemText := r.secret(EnvGitHubAppPrivateKey)
	path, fromFile := r.get(EnvGitHubAppPrivateKeyFile)
	name := EnvGitHubAppPrivateKey
	switch {
	case inline && fromFile:
		r.fail(EnvGitHubAppPrivateKeyFile, "is set together with %s; set one", EnvGitHubAppPrivateKey)
		return ""
	case fromFile:
		name = EnvGitHubAppPrivateKeyFile
		if err := checkSecretFileMode(path); err != nil {
			r.fail(name, "%v", err)
			return ""
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			r.fail(name, "cannot read %s: %v", path, errors.Unwrap(err))
			return ""
		}
		pemText = string(raw)
	case !inline:
		return ""
	}
	if _, err := githubapi.ParseAppPrivateKey([]byte(pemText)); err != nil {
		r.fail(name, "is not a PEM-encoded RSA private key")
		return ""
	}
	if appID == 0 && !r.invalid[EnvGitHubAppID] {
		r.fail(name, "is set without %s (the JWT's issuer)", EnvGitHubAppID)
		return ""
	}
	return pemText
}

func (r *reader) gitHubAppID() int64 {
	v, ok := r.get(EnvGitHubAppID)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		r.fail(EnvGitHubAppID, "%q is not a whole number ≥ 1", v)
		return 0
	}
	return n
}

// wholeNumber reads an integer in [lo, hi]; hi 0 means no upper bound.
func (r *reader) wholeNumber(name string, def, lo, hi int64) int64 {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case (err != nil || n < lo) && hi == 0:
		r.fail(name, "%q is not a whole number ≥ %d", v, lo)
		return def
	case hi != 0 && (err != nil || n < lo || n > hi):
		r.fail(name, "%q is not a whole number between %d and %d", v, lo, hi)
		return def
	}
	return n
}

// secureCookies reads EnvCookieSecure ("true" or "false", either way the setting wins); unset,
// cookies are Secure when the public URL (already read and valid) is https.
func (r *reader) secureCookies(publicURL string) bool {
	switch r.oneOf(EnvCookieSecure, "", "true", "false") {
	case "true":
		return true
	case "false":
		return false
	}
	u, err := url.Parse(publicURL)
	return publicURL != "" && err == nil && u.Scheme == "https"
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a
		}
	}
	r.fail(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
	return def
}

func (r *reader) logLevel() string {
	v, ok := r.get(EnvLogLevel)
	if !ok {
		return DefaultLogLevel
	}
	lvl, err := zapcore.ParseLevel(v)
	if err != nil {
		r.fail(EnvLogLevel, "%q is not a log level (debug, info, warn, error)", v)
		return DefaultLogLevel
	}
	return lvl.String()
}

func (r *reader) serverID() string {
	if v, ok := r.get(EnvServerID); ok {
		if len(v) > 200 {
			r.fail(EnvServerID, "is longer than 200 characters")
		}
		return v
	}
	return defaultServerID()
}

// defaultServerID is hostname-pid-random: unique among servers sharing one database even when
// two processes of one host get the same pid in different containers.
func defaultServerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "hephaestus"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// MinChangesStreamMax keeps streams from churning: shorter, a stream would end before the
// heartbeat and re-authorisation interval (15 s) has passed a few times.
const MinChangesStreamMax = time.Minute

// duration reads Go syntax ("90s", "72h") or days ("3d", "1.5d"); it must be positive.
func (r *reader) duration(name string, def time.Duration) time.Duration {
	v, ok := r.get(name)
	if !ok {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil {
		r.fail(name, "%q %v", v, err)
		return def
	}
	if d <= 0 {
		r.fail(name, "%q is not a positive duration", v)
		return def
	}
	return d
}

// crossCheck builds the domain's retry policy and lease timing: the domain constructors are
// the rule, this only says which variables broke it. Variables already reported are skipped
// so one typo gives one line.
func (r *reader) crossCheck(c *ConsumerConfig) {
	if !r.invalid[EnvPoisonBaseDelay] && !r.invalid[EnvPoisonMaxDelay] && !r.invalid[EnvPoisonMaxAttempts] {
		p, err := inbox.NewRetryPolicy(c.PoisonBaseDelay, c.PoisonMaxDelay, c.PoisonMaxAttempts)
		if err != nil {
			r.fail(EnvPoisonMaxDelay, "%s with %s %s: %v", c.PoisonMaxDelay, EnvPoisonBaseDelay, c.PoisonBaseDelay, err)
		}
		c.Retry = p
	}
	if !r.invalid[EnvLeaseDuration] && !r.invalid[EnvRenewInterval] && !r.invalid[EnvHandlerTimeout] {
		t, err := inbox.NewLeaseTiming(c.LeaseDuration, c.RenewInterval, c.HandlerTimeout)
		if err != nil {
			r.fail(EnvRenewInterval, "%s with %s %s: %v", c.RenewInterval, EnvLeaseDuration, c.LeaseDuration, err)
		}
		c.Lease = t
	}
}

// Development webhook secrets: the Makefile exports them for `make run` and `make demo`, so
// anyone can sign a delivery with them. Only the embedded development database may use them.
const (
	DevGitHubWebhookSecret = "dev-github-webhook-secret"
	DevSlackSigningSecret  = "dev-slack-signing-secret"
)

// refuseDevelopmentSecrets stops a server with a real database (DATABASE_URL) that was given
// a well-known development secret, e.g. a production deployment started through make.
func (r *reader) refuseDevelopmentSecrets(c Config) {
	if c.Embedded() {
		return
	}
	if c.GitHubWebhookSecret == DevGitHubWebhookSecret {
		r.fail(EnvGitHubWebhookSecret, "is the public development secret of the Makefile; set the GitHub App's own secret when %s is set", EnvDatabaseURL)
	}
	if c.SlackSigningSecret == DevSlackSigningSecret {
		r.fail(EnvSlackSigningSecret, "is the public development secret of the Makefile; set the Slack app's own signing secret when %s is set", EnvDatabaseURL)
	}
}

// ParseDuration accepts Go's syntax ("90s", "1h30m") and a day suffix ("3d", "1.5d").
func ParseDuration(s string) (time.Duration, error) {
	days, ok := strings.CutSuffix(s, "d")
	if !ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errDurationSyntax
		}
		return d, nil
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, errDurationSyntax
	}
	// float64(MaxInt64) is 2^63; a product below it converts without overflow.
	ns := n * float64(24*time.Hour)
	if math.Abs(ns) >= float64(math.MaxInt64) {
		return 0, errDurationRange
	}
	return time.Duration(ns), nil
}

type durationError string

func (e durationError) Error() string { return string(e) }

const (
	errDurationSyntax = durationError("is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)")
	errDurationRange  = durationError("is too long for a duration")
)

// installFlows refuses half-configured install flows: a client id without its secret (or the
// reverse) would only fail when a person is already on the provider's page.
func (r *reader) installFlows(c Config) {
	r.pair(EnvGitHubClientID, c.GitHubClientID, EnvGitHubClientSecret, c.GitHubClientSecret)
	r.pair(EnvSlackClientID, c.SlackClientID, EnvSlackClientSecret, c.SlackClientSecret)
	if c.GitHubAppSlug != "" && !appSlugPattern.MatchString(c.GitHubAppSlug) {
		r.fail(EnvGitHubAppSlug, "%q is not a GitHub App slug", c.GitHubAppSlug)
	}
}

// pair reports the one of two variables that is set without the other (never its value).
func (r *reader) pair(name1, v1, name2, v2 string) {
	switch {
	case v1 != "" && v2 == "":
		r.fail(name1, "is set without %s", name2)
	case v1 == "" && v2 != "":
		r.fail(name2, "is set without %s", name1)
	}
}

var appSlugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,99}$`)

// gitHubModule is the GitHub module's part of the configuration.
func (c Config) gitHubModule() githubmodule.Config {
	return githubmodule.Config{WebhookSecret: []byte(c.GitHubWebhookSecret), AppID: c.GitHubAppID,
		AppPrivateKey: c.GitHubAppPrivateKey, APIURL: c.GitHubAPIURL,
		RedeliveryInterval: c.GitHubRedeliveryInterval, WebURL: c.GitHubOAuthURL,
		AppSlug: c.GitHubAppSlug, ClientID: c.GitHubClientID, ClientSecret: c.GitHubClientSecret}
}

// gitLabModule is the GitLab module's part of the configuration.
func (c Config) gitLabModule() gitlabmodule.Config {
	return gitlabmodule.Config{APIURL: c.GitLabAPIURL}
}

// outlineModule is the Outline module's part of the configuration.
func (c Config) outlineModule() outlinemodule.Config {
	return outlinemodule.Config{APIURL: c.OutlineAPIURL}
}

// slackModule is the Slack module's part of the configuration.
func (c Config) slackModule() slackmodule.Config {
	return slackmodule.Config{SigningSecret: []byte(c.SlackSigningSecret), APIURL: c.SlackAPIURL, BotToken: c.SlackBotToken,
		ClientID: c.SlackClientID, ClientSecret: c.SlackClientSecret, PublicURL: c.PublicURL}
}
