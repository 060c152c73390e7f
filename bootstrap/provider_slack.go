package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/http/mirrorapi/slackread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	slackhandlers "github.com/hephaestus-dev/hephaestus/adapters/slack/handlers"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// slackSet is everything the Slack adapter contributes: its webhook, its handlers (through the
// DeliveryInbox and the Slack mirror store) and its read API.
var slackSet = wire.NewSet(
	provideSlackWebhook,
	slackmirror.New,
	provideSlackHandlers,
	provideSlackRoutes,
)

func provideSlackWebhook(cfg Config) (*slack.Webhook, error) {
	return slack.NewWebhook(slack.Config{SigningSecret: []byte(cfg.SlackSigningSecret)})
}

// slackHandlers registers the Slack handlers with the consumer's registry.
type slackHandlers handlerRegistration

// provideSlackHandlers runs without a Web API notifier: Slack connections hold no bot token
// yet, so the join notice and App Home views (external effects) are not sent; every database
// step runs as specified.
func provideSlackHandlers(inbox ports.DeliveryInbox, store *slackmirror.Store, log ports.Logger) slackHandlers {
	return func(reg handlerRegistry) error {
		return slackhandlers.Register(reg, slackhandlers.Deps{Inbox: inbox, Store: store, Log: log})
	}
}

// slackRoutes mounts the Slack read API.
type slackRoutes routeRegistration

func provideSlackRoutes(manage *management.Service, members ports.WorkspaceStore, store *slackmirror.Store, log ports.Logger) slackRoutes {
	return func(r gin.IRouter) error {
		return slackread.Register(r, slackread.Config{Auth: manage, Members: members, Store: store, Log: log})
	}
}
