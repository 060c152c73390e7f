// Package bootstrap reads the configuration, composes the service with Wire and owns the
// process lifecycle (database, HTTP server, claimers, shutdown order).
package bootstrap

import (
	"cmp"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/providers"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// Environment variables of CONTRACT.md's Configuration table, plus the operational ones.
const (
	EnvDatabaseURL     = "DATABASE_URL"
	EnvHTTPAddr        = "HEPHAESTUS_HTTP_ADDR"
	EnvAdminToken      = "HEPHAESTUS_ADMIN_TOKEN"
	EnvCredentialsKey  = "HEPHAESTUS_CREDENTIALS_KEY"
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
	// credential are checked again with the provider (one server runs it).
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
	// EnvPublicURL is the server's external base URL: install flows name their callbacks
	// with it (providerkit.Env), and an https one makes cookies Secure.
	EnvPublicURL = "HEPHAESTUS_PUBLIC_URL"
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
	DefaultWebhookMaxBytes = 26214400 // 25 MiB: the largest payload cap of a provider
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
	CredentialsKeys []secrets.Key
	// PublicURL is the server's external base URL; empty when unset.
	PublicURL string
	// TraceURL is the trace link template with {traceId}; empty: no link.
	TraceURL string
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

	// Modules are the provider modules, each with its own configuration: LoadConfig makes them
	// with the loaders adapters/providers lists. A harness may add one of its own (a toy
	// provider in a spec) before InitializeApp, or replace the list: the server builds,
	// routes, counts and tears down exactly these. The list needs one module whose provider
	// is a contract.InstallationSource (admission's namespace of installation events).
	Modules []providerkit.Module

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
type Problem = envconfig.Problem

// ConfigError lists every invalid variable, so an operator fixes them all in one go.
type ConfigError = envconfig.Error

// LoadConfig reads every variable through getenv (os.Getenv in production): the process
// settings here, and each provider module's own through its loader (adapters/providers). It
// applies the defaults and validates. A *ConfigError lists all problems, not only the first.
func LoadConfig(getenv func(string) string) (Config, error) {
	r := envconfig.NewReader(getenv)
	c := Config{
		Tracing:         telemetry.TracingEnabled(getenv),
		TracingProtocol: cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL")),
		DatabaseURL:     databaseURL(r),
		HTTPAddr:        listenAddr(r, EnvHTTPAddr, DefaultHTTPAddr),
		AdminToken:      adminToken(r),
		PublicURL:       r.HTTPURL(EnvPublicURL, ""),
		TraceURL:        traceURL(r, EnvTraceURL),
		WebhookMaxBytes: r.WholeNumber(EnvWebhookMaxBytes, DefaultWebhookMaxBytes, 1, 0),
		// At least one 32 KiB first read; 1 TiB is far past any machine this runs on.
		WebhookInflightBytes: r.WholeNumber(EnvWebhookInflightBytes, DefaultWebhookInflightBytes, 32<<10, 1<<40),
		AdmissionLockTimeout: r.Duration(EnvAdmissionLockTimeout, DefaultAdmissionLockTimeout),
		ShutdownTimeout:      r.Duration(EnvShutdownTimeout, DefaultShutdownTimeout),
		DataDir:              r.Text(EnvDataDir, DefaultDataDir),
		LogFormat:            r.OneOf(EnvLogFormat, DefaultLogFormat, "json", "console"),
		LogLevel:             logLevel(r),
		ServerID:             serverID(r),
		Consumer: ConsumerConfig{
			Claimers:          int(r.WholeNumber(EnvClaimers, DefaultClaimers, 1, MaxClaimers)),
			ReplayWindow:      r.Duration(EnvReplayWindow, DefaultReplayWindow),
			DeadRetention:     r.Duration(EnvDeadRetention, DefaultDeadRetention),
			HandlerTimeout:    r.Duration(EnvHandlerTimeout, DefaultHandlerTimeout),
			PoisonMaxAttempts: int(r.WholeNumber(EnvPoisonMaxAttempts, DefaultPoisonMaxAttempts, 1, 0)),
			PoisonBaseDelay:   r.Duration(EnvPoisonBaseDelay, DefaultPoisonBaseDelay),
			PoisonMaxDelay:    r.Duration(EnvPoisonMaxDelay, DefaultPoisonMaxDelay),
			LeaseDuration:     r.Duration(EnvLeaseDuration, DefaultLeaseDuration),
			RenewInterval:     r.Duration(EnvRenewInterval, DefaultRenewInterval),
			ReaperInterval:    r.Duration(EnvReaperInterval, DefaultReaperInterval),
			PollInterval:      r.Duration(EnvPollInterval, DefaultPollInterval),
			RetentionInterval: r.Duration(EnvRetentionInterval, DefaultRetentionInterval),
		},
		AccessRecheckInterval:   r.Duration(EnvAccessRecheckInterval, DefaultAccessRecheck),
		ChangesRetention:        r.Duration(EnvChangesRetention, DefaultChangesRetention),
		ChangesStreamMax:        r.Duration(EnvChangesStreamMax, DefaultChangesStreamMax),
		RejectionsRetention:     r.Duration(EnvRejectionsRetention, DefaultRejectionsRetention),
		ReplayMaxRunning:        r.WholeNumber(EnvReplayMaxRunning, DefaultReplayMaxRunning, 1, MaxReplayMaxRunning),
		ReplayMaxRows:           r.WholeNumber(EnvReplayMaxRows, DefaultReplayMaxRows, 1, MaxReplayMaxRows),
		OperatorReadConnections: int(r.WholeNumber(EnvOperatorReadConnections, DefaultOperatorReadConns, 1, MaxOperatorReadConns)),
		OperatorReadTimeout:     r.Duration(EnvOperatorReadTimeout, DefaultOperatorReadTimeout),
		OperatorReadsPerAccount: int(r.WholeNumber(EnvOperatorReadsPerAccount, DefaultOperatorReadsPerAcct, 1, MaxOperatorReadConns)),
	}
	c.SecureCookies = secureCookies(r, c.PublicURL)
	c.CredentialsKeys = credentialsKeys(r)
	if len(c.CredentialsKeys) > 0 {
		c.CredentialsKey = c.CredentialsKeys[0].Secret
	}
	if c.ChangesStreamMax < MinChangesStreamMax && !r.Invalid(EnvChangesStreamMax) {
		r.Fail(EnvChangesStreamMax, "%s is shorter than %s", c.ChangesStreamMax, MinChangesStreamMax)
	}
	crossCheck(r, &c.Consumer)
	modules, err := loadModules(r, providers.Loaders(), providerkit.Env{Getenv: getenv, PublicURL: c.PublicURL, Embedded: c.Embedded()})
	if err != nil {
		return Config{}, err
	}
	c.Modules = modules
	if err := r.Err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// loadModules makes each provider module with its loader, adding the problems of every
// module's variables to r.
func loadModules(r *envconfig.Reader, loaders []providerkit.Loader, env providerkit.Env) ([]providerkit.Module, error) {
	var modules []providerkit.Module
	for _, load := range loaders {
		m, err := load(env)
		if err := r.Merge(err); err != nil {
			return nil, err
		}
		if m != nil {
			modules = append(modules, m)
		}
	}
	return modules, nil
}
