//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"context"
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	githubapi "github.com/hephaestus-dev/hephaestus/adapters/github/api"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubsync"
	gitlabapi "github.com/hephaestus-dev/hephaestus/adapters/gitlab/api"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabsync"
	"github.com/hephaestus-dev/hephaestus/adapters/http/syncapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/gitlabmirror"
	pgmanagement "github.com/hephaestus-dev/hephaestus/adapters/postgres/management"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// syncSet is backfill and teardown (CONTRACT.md "Sync and teardown"): the job store, each
// provider's sync source, the runner (one of the App's background loops) and the sync routes.
var syncSet = wire.NewSet(
	provideSyncJobs,
	provideGitHubSyncSource,
	provideGitLabSyncSource,
	provideSyncSources,
	provideSyncRunner,
	provideSyncService,
	provideSyncRoutes,
)

func provideSyncJobs(pool *pgxpool.Pool) (*syncjobs.Store, error) { return syncjobs.New(pool) }

// githubSyncSource is GitHub's sync source, under its own type so Wire tells sources apart.
type githubSyncSource ports.SyncSource

// provideGitHubSyncSource reads GitHub with the workspace's credential (api.Credentials: the
// installation token of an App connection, the verified PAT of a PAT connection, the static
// token only without App authentication) and writes through the GitHub mirror store.
func provideGitHubSyncSource(cfg Config, app *githubapi.App, secrets *pgmanagement.LiveSecrets,
	store *githubmirror.Store,
) (githubSyncSource, error) {
	creds := &githubapi.Credentials{App: app, Store: secrets, Static: cfg.GitHubAPIToken}
	client, err := githubapi.New(githubapi.Config{BaseURL: cfg.GitHubAPIURL, Token: creds.Token})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvGitHubAPIURL, err)
	}
	return githubsync.New(client, store)
}

// provideSyncSources lists the providers' sync sources: one element per provider that syncs.
func provideSyncSources(gh githubSyncSource, gl gitlabSyncSource) []ports.SyncSource {
	return []ports.SyncSource{gh, gl}
}

func provideSyncRunner(cfg Config, store *syncjobs.Store, sources []ports.SyncSource, metrics *telemetry.Metrics,
	log ports.Logger, clock ports.Clock,
) (*backfill.Runner, error) {
	return backfill.New(backfill.Config{Owner: cfg.ServerID}, store, sources, metrics, log, clock)
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

// gitlabSyncSource is GitLab's sync source.
type gitlabSyncSource ports.SyncSource

// provideGitLabSyncSource reads GitLab with HEPHAESTUS_GITLAB_API_TOKEN at
// HEPHAESTUS_GITLAB_API_URL (without both, GitLab backfills fail as refused and teardown still
// runs) and writes through the GitLab mirror store. Its pages are larger than the handlers'
// single reads, so its body bound is 8 MiB.
func provideGitLabSyncSource(cfg Config, store *gitlabmirror.Store) (gitlabSyncSource, error) {
	var reader gitlabsync.Reader
	if cfg.GitLabAPIURL != "" && cfg.GitLabAPIToken != "" {
		token := cfg.GitLabAPIToken
		client, err := gitlabapi.New(gitlabapi.Config{BaseURL: cfg.GitLabAPIURL, MaxBodyBytes: 8 << 20,
			Token: func(context.Context) (string, error) { return token, nil }})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGitLabAPIURL, err)
		}
		reader = client
	}
	return gitlabsync.New(reader, store)
}
