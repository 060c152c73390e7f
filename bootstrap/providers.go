//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/apidoc"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/accessrecheck"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Provider sets, one per part of the service. buildServices (wire.go) composes them. The
// provider modules come from Config.Modules (adapters/providers lists them): adding a provider
// changes nothing here.

// processSet is what exists before the database: metrics and the App.
var processSet = wire.NewSet(provideMetrics, newApp)

// coreSet turns the graph input into the ports every use case shares.
var coreSet = wire.NewSet(
	wire.FieldsOf(new(graphInput), "Config", "Secrets", "Pool", "AdmissionPool", "LookupPool", "ReadPool", "Log", "Metrics"),
	provideLogger,
	wire.InterfaceValue(new(ports.Clock), systemClock{}),
	wire.Bind(new(ports.AdmissionMetrics), new(*telemetry.Metrics)),
	wire.Bind(new(ports.ConsumerMetrics), new(*telemetry.Metrics)),
)

// inboxSet is the inbox store and the consumer (claimers, renewer, reaper, retention).
var inboxSet = wire.NewSet(
	provideInboxStore,
	wire.Bind(new(ports.InboxStore), new(*inboxstore.Store)),
	consumer.NewSignal,
	wire.Bind(new(ports.Notifier), new(*consumer.Signal)),
	provideConsumer,
	provideRunners,
)

// handlerSet registers the provider handlers with the consumer.
//
// Each provider's set provides its handler registration; provideHandlerRegistry lists them.
var handlerSet = wire.NewSet(
	provideDeliveryInbox,
	wire.Bind(new(ports.DeliveryInbox), new(*deliveryinbox.Inbox)),
	provideHandlerRegistry,
	wire.Bind(new(ports.HandlerRegistry), new(*consumer.Registry)),
)

// managementSet is the secret box, the management stores and use cases.
var managementSet = wire.NewSet(
	provideSecretBox,
	wire.Bind(new(ports.SecretBox), new(*secrets.AESGCM)),
	provideStoreConfig,
	managementstore.NewWorkspaces,
	wire.Bind(new(ports.AccountStore), new(*managementstore.Workspaces)),
	wire.Bind(new(ports.WorkspaceStore), new(*managementstore.Workspaces)),
	managementstore.NewConnections,
	wire.Bind(new(ports.ConnectionStore), new(*managementstore.Connections)),
	provideSourceDirectory,
	wire.Bind(new(ports.ConnectionDirectory), new(*managementstore.SourceDirectory)),
	// The provider clients' per-workspace credentials (Slack bot tokens, GitHub PATs).
	managementstore.NewLiveSecrets,
	provideAccessCheckers,
	provideManagement,
	provideAccessRecheck,
)

// admissionSet is the admission store and use case.
var admissionSet = wire.NewSet(
	provideAdmissionStore,
	wire.Bind(new(ports.AdmissionStore), new(*admissionstore.Store)),
	provideAdmissionConfig,
	admission.New,
)

// providerSet is the provider modules (providerModules) and what the core takes of them.
var providerSet = wire.NewSet(
	providerModules,
	provideModules,
	provideProviders,
	provideWebhooks,
)

// httpSet is the routes the API packages add to the server.
var httpSet = wire.NewSet(provideRegistrars)

// graphInput is what the service graph is built from once the database is up.
type graphInput struct {
	Config        Config
	Secrets       instanceSecrets
	Pool          *pgxpool.Pool
	AdmissionPool admissionPool
	LookupPool    lookupPool
	ReadPool      operatorReadPool
	Log           *zap.Logger
	Metrics       *telemetry.Metrics
}

// systemClock is the wall clock behind ports.Clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func provideLogger(log *zap.Logger) ports.Logger { return telemetry.NewTraceLogger(log) }

func provideAdmissionStore(pool admissionPool) (*admissionstore.Store, error) {
	return admissionstore.New(pool.Pool)
}

// provideSourceDirectory puts the connection lookups of unauthenticated webhook requests
// (GitLab, Outline: read the URL's connection and open its secret before verifying) on a
// pool of their own, so a flood of random ids or tokens waits for those few connections and
// never for the ones the claimers, the renewer and the reaper use.
func provideSourceDirectory(pool lookupPool, box ports.SecretBox, cfg managementstore.Config) (*managementstore.SourceDirectory, error) {
	return managementstore.NewSourceDirectory(pool.Pool, box, cfg)
}

func provideInboxStore(pool *pgxpool.Pool) (*inboxstore.Store, error) {
	return inboxstore.New(pool, inboxstore.Config{})
}

// provideConsumer maps the HEPHAESTUS_INTEGRATION_CONSUMER_* variables onto the consumer and
// binds each handler call to its dispatch identity (the step runner's fence).
func provideConsumer(cfg Config, store ports.InboxStore, handlers ports.HandlerRegistry, wake *consumer.Signal,
	clock ports.Clock, log ports.Logger, metrics ports.ConsumerMetrics,
) (*consumer.Consumer, error) {
	c := cfg.Consumer
	return consumer.New(consumer.Config{
		Owner:             cfg.ServerID,
		Claimers:          c.Claimers,
		LeaseDuration:     c.LeaseDuration,
		RenewInterval:     c.RenewInterval,
		HandlerTimeout:    c.HandlerTimeout,
		ReaperInterval:    c.ReaperInterval,
		PollInterval:      c.PollInterval,
		ReplayWindow:      c.ReplayWindow,
		DeadRetention:     c.DeadRetention,
		RetentionInterval: c.RetentionInterval,
		RetryBaseDelay:    c.PoisonBaseDelay,
		RetryMaxDelay:     c.PoisonMaxDelay,
		PoisonMaxAttempts: c.PoisonMaxAttempts,
		DispatchContext:   dispatch.BindDispatch,
		Tracer:            telemetry.DeliveryTracer{Server: cfg.ServerID},
		StopBudget:        consumerStopBudget(cfg.ShutdownTimeout),
	}, store, handlers, wake, clock, log, metrics)
}

// provideRunners lists the background loops App.Run starts and waits for: the consumer
// (claimers, renewer, reaper, retention), the person-erasure runner, the access recheck, the
// change feed (its Run ends the open feed streams when the server stops) and its retention, and
// the backfill runner, the bulk replay runner, and the providers' own loops (contract.BackgroundWork).
func provideRunners(c *consumer.Consumer, e *personerasure.Runner, a *accessrecheck.Recheck, cf *changes.Feed, cr *changes.Retention,
	sy *backfill.Runner, rl *rejections.Log, rp *replays.Runner, providers []contract.Provider,
) []Runner {
	runners := []Runner{c, e, a, cf, cr, sy, rl, rp}
	for _, p := range providers {
		if w, ok := p.(contract.BackgroundWork); ok {
			for _, r := range w.Runners() {
				runners = append(runners, r)
			}
		}
	}
	return runners
}

// provideAccessCheckers lists the providers' access checkers (contract.AccessChecking): the kinds
// whose subscriptions are checked with the connection's own credential.
func provideAccessCheckers(providers []contract.Provider) []contract.ResourceAccessChecker {
	var checkers []contract.ResourceAccessChecker
	for _, p := range providers {
		if a, ok := p.(contract.AccessChecking); ok {
			checkers = append(checkers, a.AccessCheckers()...)
		}
	}
	return checkers
}

// provideAccessRecheck is the periodic recheck of those subscriptions, on the one server
// holding its singleton lease (taken like retention's, through the inbox store).
func provideAccessRecheck(cfg Config, store *managementstore.Connections, lease *inboxstore.Store, box ports.SecretBox,
	checkers []contract.ResourceAccessChecker, log ports.Logger, clock ports.Clock,
) (*accessrecheck.Recheck, error) {
	return accessrecheck.New(accessrecheck.Config{Owner: cfg.ServerID, Interval: cfg.AccessRecheckInterval},
		store, lease, box, checkers, log, clock)
}

// provideHandlerRegistry is the consumer's handler registry with every provider's handlers. A
// delivery of an event type without a handler is completed and counted, not failed.
func provideHandlerRegistry(providers []contract.Provider) (*consumer.Registry, error) {
	reg := consumer.NewRegistry()
	for _, p := range providers {
		if err := p.RegisterHandlers(reg); err != nil {
			return nil, fmt.Errorf("register %s handlers: %w", p.Provider().Label(), err)
		}
	}
	return reg, nil
}

// provideDeliveryInbox is the step runner every handler writes through.
func provideDeliveryInbox(pool *pgxpool.Pool) (*deliveryinbox.Inbox, error) {
	return deliveryinbox.New(pool)
}

// provideSecretBox is the server's secret box: every configured key opens, the first seals,
// and a value sealed before key ids opens only while the database says the legacy fallback is
// open (managementstore.LegacyFallback).
func provideSecretBox(s instanceSecrets, pool *pgxpool.Pool) (*secrets.AESGCM, error) {
	fallback, err := managementstore.NewLegacyFallback(pool)
	if err != nil {
		return nil, err
	}
	return gatedSecretBox(s, fallback)
}

// gatedSecretBox is the box of the configured keys behind fallback's gate.
func gatedSecretBox(s instanceSecrets, fallback *managementstore.LegacyFallback) (*secrets.AESGCM, error) {
	var (
		ring *secrets.AESGCM
		err  error
	)
	if len(s.CredentialsKeys) > 0 {
		ring, err = secrets.NewKeyring(s.CredentialsKeys)
	} else {
		ring, err = secrets.NewAESGCM(s.CredentialsKey)
	}
	if err != nil {
		return nil, err
	}
	return ring.WithLegacyGate(fallback.Opens), nil
}

// provideStoreConfig gives the management stores the connection kinds the modules declare.
func provideStoreConfig(modules []contract.ProviderModule) managementstore.Config {
	var kinds []connection.Kind
	for _, m := range modules {
		kinds = append(kinds, m.Kinds()...)
	}
	return managementstore.Config{Kinds: kinds}
}

func provideManagement(s instanceSecrets, accounts ports.AccountStore, workspaces ports.WorkspaceStore,
	connections ports.ConnectionStore, box ports.SecretBox, modules []contract.ProviderModule,
	checkers []contract.ResourceAccessChecker, store *managementstore.Connections, feed *changefeed.Store,
) (*management.Service, error) {
	svc, err := management.New(management.Config{AdminToken: s.AdminToken, AccessCheckers: checkers},
		accounts, workspaces, connections, box, modules)
	if err != nil {
		return nil, err
	}
	// connection.state_changed carries the connection as the management API shows it.
	return svc, store.PublishChanges(feed, managementapi.ConnectionView(svc))
}

// provideWebhooks lists the providers' receiving sides.
func provideWebhooks(providers []contract.Provider) webhookapi.Hooks {
	hooks := make(webhookapi.Hooks, 0, len(providers))
	for _, p := range providers {
		hooks = append(hooks, p.Webhook())
	}
	return hooks
}

// provideMetrics makes the metrics with every label value the service can record exported at
// 0 from start: the providers of provideModules, each with admission's refusal reasons, the
// payload rule's and its own (contract.RejectionReasoner).
func provideMetrics(cfg Config) *telemetry.Metrics {
	m := telemetry.NewMetrics()
	m.Declare(metricLabels(provideModules(providerModules(cfg))))
	return m
}

// metricLabels collects the label values the modules and the core declare.
func metricLabels(modules []contract.ProviderModule) telemetry.Labels {
	l := telemetry.Labels{RejectReasons: map[string][]string{}}
	for _, mod := range modules {
		p := mod.Provider().Label()
		l.Providers = append(l.Providers, p)
		reasons := append(admission.Reasons(), inbox.PayloadReasons()...)
		if r, ok := mod.(contract.RejectionReasoner); ok {
			reasons = append(reasons, r.RejectionReasons()...)
		}
		l.RejectReasons[p] = reasons
		if c, ok := mod.(contract.CounterDeclarer); ok {
			l.Counters = append(l.Counters, c.Counters()...)
		}
	}
	return l
}

// provideModules is the providers' static parts (connection kinds, config validation,
// resource types), known before the database is up.
func provideModules(providers []providerkit.Module) []contract.ProviderModule {
	var modules []contract.ProviderModule
	for _, m := range providers {
		modules = append(modules, m)
	}
	return modules
}

// provideProviders builds every provider module from the shared dependencies.
func provideProviders(cfg Config, modules []providerkit.Module, pool *pgxpool.Pool, inbox ports.DeliveryInbox, changes ports.ChangePublisher,
	connections *managementstore.Connections, secrets *managementstore.LiveSecrets,
	lease *inboxstore.Store, metrics *telemetry.Metrics, log ports.Logger,
) ([]contract.Provider, error) {
	deps := providerkit.Deps{Owner: cfg.ServerID, Pool: pool, Inbox: inbox, Changes: changes, Connections: connections,
		Secrets: secrets, Lease: lease, Counter: metrics.Counter, Log: log}
	var providers []contract.Provider
	for _, m := range modules {
		p, err := m.Build(deps)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", m.Provider().Label(), err)
		}
		providers = append(providers, p)
	}
	return providers, nil
}

// provideAdmissionConfig stores the namespace of the provider whose installations are control
// events (contract.InstallationSource) on installation rows no connection names yet.
// Every refusal is also counted in the rejection log.
func provideAdmissionConfig(providers []contract.Provider, rejected *rejections.Log) admission.Config {
	cfg := admission.Config{Rejections: rejected}
	for _, p := range providers {
		if s, ok := p.(contract.InstallationSource); ok {
			cfg.DefaultSourceServerURL = s.DefaultSourceServerURL()
		}
	}
	return cfg
}

// provideRegistrars mounts the webhook receiver and the management API.
func provideRegistrars(cfg Config, admit *admission.Service, hooks webhookapi.Hooks, manage *management.Service,
	members ports.WorkspaceStore, log ports.Logger,
	ops operatorRoutes, cons consoleRoutes, install installRoutes, ch changesRoutes, sy syncRoutes, providers []contract.Provider,
) []server.Registrar {
	registrars := []server.Registrar{
		server.Registrar(ops), server.Registrar(cons), server.Registrar(install), server.Registrar(ch), server.Registrar(sy),
		func(r gin.IRouter) error {
			return webhookapi.Register(r, admit, hooks, webhookapi.Config{MaxBytes: cfg.WebhookMaxBytes, InflightBytes: cfg.WebhookInflightBytes})
		},
		func(r gin.IRouter) error {
			managementapi.Register(r, manage, log)
			return nil
		},
		apidoc.Register,
	}
	for _, p := range providers {
		if routes, ok := p.(providerkit.Routes); ok {
			guard := providerkit.Guard{Auth: manage, Members: members, Log: log}
			registrars = append(registrars, func(r gin.IRouter) error { return routes.Mount(r, guard) })
		}
	}
	return registrars
}

// newServices collects the graph's products for App.Run.
func newServices(registrars []server.Registrar, runners []Runner) *services {
	return &services{registrars: registrars, runners: runners}
}

// providerModules are the configured provider modules (Config.Modules: the list of
// adapters/providers, each module with its own configuration, plus any a harness added).
func providerModules(cfg Config) []providerkit.Module { return cfg.Modules }
