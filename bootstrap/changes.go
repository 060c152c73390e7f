//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/http/changesapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// changesSet is the change feed: the publisher the mirror stores write through, the feed
// read with its in-process wake, retention and the HTTP route.
var changesSet = wire.NewSet(
	changes.NewSignal,
	provideChangeStore,
	wire.Bind(new(ports.ChangePublisher), new(*changefeed.Store)),
	provideChangeFeed,
	provideChangeRetention,
	provideChangeRoutes,
)

// provideChangeStore wakes this server's waiting feed readers after every commit that
// published a change.
func provideChangeStore(pool *pgxpool.Pool, signal *changes.Signal) (*changefeed.Store, error) {
	return changefeed.New(pool, signal.Notify)
}

func provideChangeFeed(store *changefeed.Store, signal *changes.Signal, metrics *telemetry.Metrics) (*changes.Feed, error) {
	return changes.NewFeed(changes.Config{}, store, signal, metrics)
}

// provideChangeRetention deletes changes older than HEPHAESTUS_CHANGES_RETENTION on the one
// server holding the change-retention lease (taken like the inbox retention's).
func provideChangeRetention(cfg Config, store *changefeed.Store, lease *inboxstore.Store, metrics *telemetry.Metrics,
	clock ports.Clock, log ports.Logger,
) (*changes.Retention, error) {
	return changes.NewRetention(changes.RetentionConfig{Owner: cfg.ServerID, Keep: cfg.ChangesRetention},
		store, lease, metrics, clock, log)
}

// changesRoutes mounts GET /api/workspaces/{ws}/changes.
type changesRoutes routeRegistration

func provideChangeRoutes(cfg Config, manage *management.Service, members ports.WorkspaceStore, feed *changes.Feed, log ports.Logger) changesRoutes {
	return func(r gin.IRouter) error {
		return changesapi.Register(r, changesapi.Config{Auth: manage, Members: members, Feed: feed,
			Stopping: feed.Stopping(), StreamMax: cfg.ChangesStreamMax, Log: log})
	}
}
