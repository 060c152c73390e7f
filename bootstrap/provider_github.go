package bootstrap

import (
	"github.com/gin-gonic/gin"
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	ghhandlers "github.com/hephaestus-dev/hephaestus/adapters/github/handlers"
	"github.com/hephaestus-dev/hephaestus/adapters/http/mirrorapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/githubmirror"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// githubSet is everything the GitHub adapter contributes: its webhook, its handlers (through
// the DeliveryInbox and the GitHub mirror store) and its read API.
var githubSet = wire.NewSet(
	provideGitHubWebhook,
	githubmirror.New,
	provideGitHubHandlers,
	provideGitHubRoutes,
)

func provideGitHubWebhook(cfg Config) (*github.Webhook, error) {
	return github.NewWebhook(github.Config{WebhookSecret: []byte(cfg.GitHubWebhookSecret), AppID: cfg.GitHubAppID})
}

// githubHandlers registers the GitHub handlers with the consumer's registry.
type githubHandlers handlerRegistration

// provideGitHubHandlers mirrors from the payloads alone: provider reads (check runs, commits a
// push left out) need an installation token, which this service does not mint yet, so no
// REST reader is configured (Deps.Reader nil is the documented "payloads only" mode).
func provideGitHubHandlers(inbox ports.DeliveryInbox, store *githubmirror.Store, log ports.Logger) githubHandlers {
	return func(reg handlerRegistry) error {
		return ghhandlers.Register(reg, ghhandlers.Deps{Inbox: inbox, Store: store, Log: log})
	}
}

// githubRoutes mounts the GitHub read API.
type githubRoutes routeRegistration

func provideGitHubRoutes(manage *management.Service, members ports.WorkspaceStore, store *githubmirror.Store, log ports.Logger) githubRoutes {
	return func(r gin.IRouter) error {
		return mirrorapi.Register(r, mirrorapi.Config{Auth: manage, Members: members, Reader: store, Log: log})
	}
}
