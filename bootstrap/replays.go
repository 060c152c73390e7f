//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/replayjobs"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// replaySet is bulk replay: the job store, its runner (one of the App's background loops, which
// wakes this server's claimers after each batch) and the use cases the operator API and the
// console share. Configured: the per-workspace limits (HEPHAESTUS_REPLAY_MAX_RUNNING,
// HEPHAESTUS_REPLAY_MAX_ROWS) and the providers a filter may name (the provider modules).
// A batch is 200 rows, a job's lease 1 minute, the poll 5 seconds
// (application/replays.RunnerConfig's defaults).
var replaySet = wire.NewSet(
	provideReplayJobs,
	wire.Bind(new(ports.ReplayJobStore), new(*replayjobs.Store)),
	provideReplayRunner,
	provideReplays,
)

func provideReplayJobs(pool *pgxpool.Pool) (*replayjobs.Store, error) {
	return replayjobs.New(pool, replayjobs.Config{})
}

func provideReplayRunner(cfg Config, store ports.ReplayJobStore, wake *consumer.Signal, log ports.Logger) (*replays.Runner, error) {
	return replays.NewRunner(replays.RunnerConfig{Owner: cfg.ServerID}, store, wake, log)
}

func provideReplays(cfg Config, modules []contract.ProviderModule, store ports.ReplayJobStore, runner *replays.Runner) (*replays.Service, error) {
	providers := make([]provider.Provider, len(modules))
	for i, m := range modules {
		providers[i] = m.Provider()
	}
	return replays.NewService(replays.ServiceConfig{Providers: providers, MaxRunning: cfg.ReplayMaxRunning, MaxRows: cfg.ReplayMaxRows},
		store, runner)
}
