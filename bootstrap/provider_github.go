//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"context"
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/api"
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
	provideGitHubAccess,
	provideGitHubMirror,
	provideGitHubHandlers,
	provideGitHubRoutes,
)

func provideGitHubWebhook(cfg Config) (*github.Webhook, error) {
	return github.NewWebhook(github.Config{WebhookSecret: []byte(cfg.GitHubWebhookSecret), AppID: cfg.GitHubAppID})
}

// provideGitHubAccess checks GITHUB_PAT subscriptions with the connection's token against
// HEPHAESTUS_GITHUB_API_URL (GET /repositories/{id}).
func provideGitHubAccess(cfg Config) (*api.RepositoryAccess, error) {
	a, err := api.NewRepositoryAccess(api.AccessConfig{BaseURL: cfg.GitHubAPIURL})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvGitHubAPIURL, err)
	}
	return a, nil
}

// githubHandlers registers the GitHub handlers with the consumer's registry.
type githubHandlers handlerRegistration

// provideGitHubHandlers wires the handlers. Provider reads (check runs, commits a push payload
// left out) go through the REST adapter when HEPHAESTUS_GITHUB_API_TOKEN is set; without it the
// handlers mirror what the payloads carry (Deps.Reader nil). Minting App installation tokens is
// not built yet: the token is a static one with read access to the monitored repositories.
func provideGitHubHandlers(cfg Config, inbox ports.DeliveryInbox, store *githubmirror.Store, log ports.Logger) (githubHandlers, error) {
	deps := ghhandlers.Deps{Inbox: inbox, Store: store, Log: log}
	if cfg.GitHubAPIToken != "" {
		token := cfg.GitHubAPIToken
		client, err := api.New(api.Config{BaseURL: cfg.GitHubAPIURL,
			Token: func(context.Context) (string, error) { return token, nil }})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGitHubAPIURL, err)
		}
		deps.Reader = client
	}
	return func(reg handlerRegistry) error { return ghhandlers.Register(reg, deps) }, nil
}

// githubRoutes mounts the GitHub read API.
type githubRoutes routeRegistration

func provideGitHubRoutes(manage *management.Service, members ports.WorkspaceStore, store *githubmirror.Store, log ports.Logger) githubRoutes {
	return func(r gin.IRouter) error {
		return mirrorapi.Register(r, mirrorapi.Config{Auth: manage, Members: members, Reader: store, Log: log})
	}
}

// provideGitHubMirror is the GitHub mirror store, publishing its changes to the change feed
// shaped as the read API shows them.
func provideGitHubMirror(pool *pgxpool.Pool, changes ports.ChangePublisher) (*githubmirror.Store, error) {
	store, err := githubmirror.New(pool)
	if err != nil {
		return nil, err
	}
	return store, store.PublishChanges(changes, mirrorapi.Views{})
}
