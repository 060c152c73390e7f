//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// githubSet is everything the GitHub adapter contributes: its webhook, its handlers (through
// the DeliveryInbox and the GitHub mirror store) and its read API.
var githubSet = wire.NewSet(
	provideGitHubWebhook,
	provideGitHubAccess,
	provideGitHubApp,
	provideGitHubMirror,
	provideGitHubPersonData,
	provideGitHubHandlers,
	provideGitHubRoutes,
)

func provideGitHubWebhook(cfg Config) (*github.Webhook, error) {
	return github.NewWebhook(github.Config{WebhookSecret: []byte(cfg.GitHubWebhookSecret), AppID: cfg.GitHubAppID})
}

// provideGitHubAccess checks GITHUB_PAT subscriptions with the connection's token against
// HEPHAESTUS_GITHUB_API_URL (GET /repositories/{id}).
func provideGitHubAccess(cfg Config) (*githubapi.RepositoryAccess, error) {
	a, err := githubapi.NewRepositoryAccess(githubapi.AccessConfig{BaseURL: cfg.GitHubAPIURL})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvGitHubAPIURL, err)
	}
	return a, nil
}

// githubHandlers registers the GitHub handlers with the consumer's registry.
type githubHandlers handlerRegistration

// provideGitHubApp is the App authentication of HEPHAESTUS_GITHUB_APP_PRIVATE_KEY (or _FILE)
// and HEPHAESTUS_GITHUB_APP_ID against HEPHAESTUS_GITHUB_API_URL; nil without a key.
func provideGitHubApp(cfg Config) (*githubapi.App, error) {
	if cfg.GitHubAppPrivateKey == "" {
		return nil, nil
	}
	key, err := githubapi.ParseAppPrivateKey([]byte(cfg.GitHubAppPrivateKey))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvGitHubAppPrivateKey, err)
	}
	app, err := githubapi.NewApp(githubapi.AppConfig{BaseURL: cfg.GitHubAPIURL, AppID: strconv.FormatInt(cfg.GitHubAppID, 10), Key: key})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvGitHubAPIURL, err)
	}
	return app, nil
}

// provideGitHubHandlers wires the handlers. Provider reads (check runs, commits a push payload
// left out) go through the REST adapter when App authentication or HEPHAESTUS_GITHUB_API_TOKEN
// is configured; without either the handlers mirror what the payloads carry (Deps.Reader nil).
// Each read carries the row's workspace's credential (api.Credentials): the installation token
// of the delivery's installation for an App workspace, the verified PAT for a PAT workspace,
// and the static token only when no App key is configured. With App authentication the
// installation handler verifies the installation's status with the App.
func provideGitHubHandlers(cfg Config, inbox ports.DeliveryInbox, store *githubmirror.Store, app *githubapi.App,
	secrets *managementstore.LiveSecrets, log ports.Logger,
) (githubHandlers, error) {
	deps := githubhandlers.Deps{Inbox: inbox, Store: store, Log: log}
	if app != nil || cfg.GitHubAPIToken != "" {
		creds := &githubapi.Credentials{App: app, Store: secrets, Static: cfg.GitHubAPIToken}
		client, err := githubapi.New(githubapi.Config{BaseURL: cfg.GitHubAPIURL, Token: creds.Token})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGitHubAPIURL, err)
		}
		deps.Reader = client
	}
	if app != nil {
		deps.Installations = app
	}
	return func(reg handlerRegistry) error { return githubhandlers.Register(reg, deps) }, nil
}

// githubRoutes mounts the GitHub read API.
type githubRoutes routeRegistration

func provideGitHubRoutes(manage *management.Service, members ports.WorkspaceStore, store *githubmirror.Store, log ports.Logger) githubRoutes {
	return func(r gin.IRouter) error {
		return githubread.Register(r, githubread.Config{Auth: manage, Members: members, Reader: store, Log: log})
	}
}

// githubPersonData is what the GitHub module declares to person erasure: where its payloads name
// a person, and its mirror store's personal-data map.
type githubPersonData personData

func provideGitHubPersonData(store *githubmirror.Store) githubPersonData {
	return githubPersonData{fields: github.PersonFields(), store: store}
}

// provideGitHubMirror is the GitHub mirror store, publishing its changes to the change feed
// shaped as the read API shows them.
func provideGitHubMirror(pool *pgxpool.Pool, changes ports.ChangePublisher, connections *managementstore.Connections) (*githubmirror.Store, error) {
	store, err := githubmirror.New(pool)
	if err != nil {
		return nil, err
	}
	if err := store.PublishConnectionStates(connections); err != nil {
		return nil, err
	}
	return store, store.PublishChanges(changes, githubread.Views{})
}
