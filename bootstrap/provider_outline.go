//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// outlineSet is everything the Outline adapter contributes: its webhook, its handlers (through the
// DeliveryInbox and the Outline mirror store) and its read API.
var outlineSet = wire.NewSet(
	provideOutlineWebhook,
	provideOutlineMirror,
	provideOutlinePersonData,
	provideOutlineHandlers,
	provideOutlineRoutes,
)

func provideOutlineWebhook() (*outline.Webhook, error) { return outline.NewWebhook(outline.Config{}) }

// outlineHandlers registers the Outline handlers with the consumer's registry.
type outlineHandlers handlerRegistration

func provideOutlineHandlers(inbox ports.DeliveryInbox, store *outlinemirror.Store) outlineHandlers {
	return func(reg handlerRegistry) error {
		return outlinehandlers.Register(reg, outlinehandlers.Deps{Inbox: inbox, Store: store})
	}
}

// outlineRoutes mounts the Outline read API.
type outlineRoutes routeRegistration

func provideOutlineRoutes(manage *management.Service, members ports.WorkspaceStore, store *outlinemirror.Store, log ports.Logger) outlineRoutes {
	return func(r gin.IRouter) error {
		return outlineread.Register(r, outlineread.Config{Auth: manage, Members: members, Store: store, Log: log})
	}
}

// outlinePersonData is what the Outline module declares to person erasure: where its payloads name
// a person, and its mirror store's personal-data map.
type outlinePersonData personData

func provideOutlinePersonData(store *outlinemirror.Store) outlinePersonData {
	return outlinePersonData{fields: outline.PersonFields(), store: store}
}

// provideOutlineMirror is the Outline mirror store, publishing its document changes to the
// change feed shaped as the read API shows them.
func provideOutlineMirror(pool *pgxpool.Pool, changes ports.ChangePublisher) (*outlinemirror.Store, error) {
	store, err := outlinemirror.New(pool)
	if err != nil {
		return nil, err
	}
	return store, store.PublishChanges(changes, outlineread.Views{})
}
