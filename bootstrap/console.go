//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/http/console"
	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/consolesession"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// consoleSet is the operator console at /console and its session table.
var consoleSet = wire.NewSet(provideConsoleSessions, provideConsoleRoutes)

func provideConsoleSessions(pool *pgxpool.Pool) (*consolesession.Store, error) {
	return consolesession.New(pool)
}

// consoleRoutes mounts the console.
type consoleRoutes routeRegistration

func provideConsoleRoutes(cfg Config, s instanceSecrets, sessions *consolesession.Store, manage *management.Service,
	dead *deadletters.Service, erasures *personerasure.Service, members ports.WorkspaceStore, feed *changes.Feed, syncs *backfill.Service,
	installs *installflow.Service, browser *deliveries.Service, rejected *rejections.Service, bulk *replays.Service,
	reads *operatorapi.ReadLimit, log ports.Logger,
) consoleRoutes {
	return func(r gin.IRouter) error {
		return console.Register(r, console.Config{Management: manage, Dead: dead, Erasures: erasures,
			Sessions: sessions, Members: members, Changes: feed, Syncs: syncs, Installs: installs, Replays: bulk,
			Deliveries: browser, Rejections: rejected, Reads: reads, AdminToken: s.AdminToken, TraceURL: cfg.TraceURL, SecureCookies: cfg.SecureCookies, Log: log})
	}
}
