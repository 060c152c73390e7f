//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/http/syncapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// syncSet is backfill and teardown (CONTRACT.md "Sync and teardown"): the job store, each
// provider's sync source, the runner (one of the App's background loops) and the sync routes.
var syncSet = wire.NewSet(
	provideSyncJobs,
	provideSyncSources,
	provideSyncRunner,
	provideSyncService,
	provideSyncRoutes,
)

func provideSyncJobs(pool *pgxpool.Pool) (*syncjobs.Store, error) {
	return syncjobs.New(pool, syncjobs.Config{})
}

// provideSyncSources lists the providers' sync sources (contract.Syncing).
func provideSyncSources(providers []contract.Provider) []contract.SyncSource {
	var sources []contract.SyncSource
	for _, p := range providers {
		if s, ok := p.(contract.Syncing); ok {
			sources = append(sources, s.SyncSources()...)
		}
	}
	return sources
}

func provideSyncRunner(cfg Config, store *syncjobs.Store, sources []contract.SyncSource, metrics *telemetry.Metrics,
	log ports.Logger, clock ports.Clock,
) (*backfill.Runner, error) {
	return backfill.New(backfill.Config{Owner: cfg.ServerID, Tracer: telemetry.DeliveryTracer{Server: cfg.ServerID}},
		store, sources, metrics, log, clock)
}

func provideSyncService(store *syncjobs.Store, runner *backfill.Runner) (*backfill.Service, error) {
	return backfill.NewService(store, runner.Wake)
}

// syncRoutes mounts POST and GET /api/workspaces/{ws}/connections/{id}/sync.
type syncRoutes routeRegistration

func provideSyncRoutes(manage *management.Service, members ports.WorkspaceStore, syncs *backfill.Service, log ports.Logger) syncRoutes {
	return func(r gin.IRouter) error {
		return syncapi.Register(r, syncapi.Config{Auth: manage, Members: members, Syncs: syncs, Log: log})
	}
}
