//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deadletterstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// operatorSet is the dead-letter API, the deliveries browser, the inbox overview and person
// erasure with its runner.
var operatorSet = wire.NewSet(
	provideOperatorReader,
	wire.Bind(new(ports.DeadLetterReader), new(*deadletterstore.Reader)),
	wire.Bind(new(ports.DeliveryReader), new(*deadletterstore.Reader)),
	provideProviderSet,
	provideReadLimit,
	provideDeadLetters,
	deliveries.New,
	provideErasureConfig,
	erasurestore.New,
	wire.Bind(new(ports.ErasureStore), new(*erasurestore.Store)),
	provideErasureRunner,
	provideErasures,
	provideOperatorRoutes,
)

// provideOperatorReader reads dead letters, deliveries and inbox counts on the operator read
// pool (operatorReadPool): its connections and statement timeout bound what operators' reads
// cost the rest of the server. Replays write through the inbox store, on the main pool.
func provideOperatorReader(pool operatorReadPool) (*deadletterstore.Reader, error) {
	return deadletterstore.New(pool.Pool)
}

// provideErasureConfig collects the providers' person-data declarations; installation rows
// carry admission's default source.
func provideErasureConfig(providers []contract.Provider, adm admission.Config) erasurestore.Config {
	cfg := erasurestore.Config{InstallationNamespaces: map[string]string{}}
	for _, p := range providers {
		cfg.Fields = append(cfg.Fields, p.PersonFields())
		cfg.Mirrors = append(cfg.Mirrors, p.PersonData())
		if _, ok := p.(contract.InstallationSource); ok {
			cfg.InstallationNamespaces[p.Provider().String()] = adm.SourceServerURLOfInstallations()
		}
	}
	return cfg
}

// provideReadLimit is the one limit of operator reads per account that the API and the console
// share (HEPHAESTUS_OPERATOR_READS_PER_ACCOUNT).
func provideReadLimit(cfg Config) (*operatorapi.ReadLimit, error) {
	return operatorapi.NewReadLimit(cfg.OperatorReadsPerAccount)
}

// provideProviderSet is the providers this server runs: what the operators' read filters may
// name (any other provider is 400 invalid-filter).
func provideProviderSet(providers []contract.Provider) provider.Set {
	names := make([]provider.Provider, 0, len(providers))
	for _, p := range providers {
		names = append(names, p.Provider())
	}
	return provider.NewSet(names...)
}

func provideDeadLetters(reader ports.DeadLetterReader, inbox ports.InboxStore, wake *consumer.Signal, providers provider.Set) (*deadletters.Service, error) {
	return deadletters.New(reader, inbox, wake, providers)
}

func provideErasureRunner(cfg Config, store ports.ErasureStore, log ports.Logger) (*personerasure.Runner, error) {
	return personerasure.NewRunner(personerasure.RunnerConfig{Tracer: telemetry.DeliveryTracer{Server: cfg.ServerID}}, store, log)
}

func provideErasures(store ports.ErasureStore, runner *personerasure.Runner) (*personerasure.Service, error) {
	return personerasure.New(store, runner)
}

// operatorRoutes mounts the operator API.
type operatorRoutes routeRegistration

func provideOperatorRoutes(manage *management.Service, members ports.WorkspaceStore, dead *deadletters.Service, browser *deliveries.Service,
	rejected *rejections.Service, erasures *personerasure.Service, bulk *replays.Service, reads *operatorapi.ReadLimit, log ports.Logger) operatorRoutes {
	return func(r gin.IRouter) error {
		operatorapi.Register(r, manage, dead, erasures, reads, log)
		operatorapi.RegisterDeliveries(r, manage, members, browser, reads, log)
		operatorapi.RegisterRejections(r, manage, members, rejected, reads, log)
		operatorapi.RegisterReplays(r, manage, members, bulk, log)
		return nil
	}
}
