//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"context"
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// slackSet is everything the Slack adapter contributes: its webhook, its handlers (through the
// DeliveryInbox and the Slack mirror store) and its read API.
var slackSet = wire.NewSet(
	provideSlackWebhook,
	provideSlackMirror,
	provideSlackPersonData,
	provideSlackHandlers,
	provideSlackRoutes,
)

func provideSlackWebhook(cfg Config) (*slack.Webhook, error) {
	return slack.NewWebhook(slack.Config{SigningSecret: []byte(cfg.SlackSigningSecret)})
}

// slackHandlers registers the Slack handlers with the consumer's registry.
type slackHandlers handlerRegistration

// provideSlackHandlers wires the handlers. The join notice and App Home views (external effects,
// repeatable after a crash) go through the Web API with the bot token of the workspace's
// connection of the team (stored sealed by the Slack install flow, or given as the secret when
// the instance administrator creates the connection); HEPHAESTUS_SLACK_BOT_TOKEN is only the
// fallback for a connection that stores none. A team with neither gets no Web API call; every
// database step runs as specified either way.
func provideSlackHandlers(cfg Config, inbox ports.DeliveryInbox, store *slackmirror.Store, secrets *managementstore.LiveSecrets, log ports.Logger) (slackHandlers, error) {
	stored := func(ctx context.Context, workspaceID int64, teamID string) (string, bool, error) {
		token, found, err := secrets.LiveSecret(ctx, workspaceID, slack.Kind, teamID)
		return string(token), found, err
	}
	client, err := webapi.New(webapi.Config{BaseURL: cfg.SlackAPIURL, Token: webapi.StoredTokens(stored, cfg.SlackBotToken)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSlackAPIURL, err)
	}
	deps := slackhandlers.Deps{Inbox: inbox, Store: store, Log: log, Notifier: client}
	return func(reg handlerRegistry) error { return slackhandlers.Register(reg, deps) }, nil
}

// slackRoutes mounts the Slack read API.
type slackRoutes routeRegistration

func provideSlackRoutes(manage *management.Service, members ports.WorkspaceStore, store *slackmirror.Store, log ports.Logger) slackRoutes {
	return func(r gin.IRouter) error {
		return slackread.Register(r, slackread.Config{Auth: manage, Members: members, Store: store, Log: log})
	}
}

// slackPersonData is what the Slack module declares to person erasure: where its payloads name
// a person, and its mirror store's personal-data map.
type slackPersonData personData

func provideSlackPersonData(store *slackmirror.Store) slackPersonData {
	return slackPersonData{fields: slack.PersonFields(), store: store}
}

// provideSlackMirror is the Slack mirror store, publishing its message changes to the change
// feed shaped as the read API shows them, and its connection state changes through the
// connection store.
func provideSlackMirror(pool *pgxpool.Pool, changes ports.ChangePublisher, connections *managementstore.Connections) (*slackmirror.Store, error) {
	store, err := slackmirror.New(pool)
	if err != nil {
		return nil, err
	}
	if err := store.PublishConnectionStates(connections); err != nil {
		return nil, err
	}
	return store, store.PublishChanges(changes, slackread.Views{})
}
