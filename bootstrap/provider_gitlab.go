//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"context"
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// gitlabSet is everything the GitLab adapter contributes: its webhook, its handlers (through the
// DeliveryInbox and the GitLab mirror store) and its read API.
var gitlabSet = wire.NewSet(
	provideGitLabWebhook,
	provideGitLabMirror,
	provideGitLabPersonData,
	provideGitLabHandlers,
	provideGitLabRoutes,
)

func provideGitLabWebhook() (*gitlab.Webhook, error) { return gitlab.NewWebhook(gitlab.Config{}) }

// gitlabHandlers registers the GitLab handlers with the consumer's registry.
type gitlabHandlers handlerRegistration

// provideGitLabHandlers wires the handlers. Provider reads (merge request approvals) go through
// the REST adapter when both HEPHAESTUS_GITLAB_API_URL and HEPHAESTUS_GITLAB_API_TOKEN are set;
// without them the handlers decide readiness from what the payloads carry (Deps.Reader nil).
// With only one of the two set, a warning names the missing one and nothing is read.
//
// One API base and one token for the whole server is a simplification: each GitLab connection
// may belong to a different GitLab instance, and project ids are only unique within an
// instance, so with connections on several instances the reads would ask the configured
// instance about another instance's project ids. Configure it only when every GitLab
// connection is on that one instance. Per-connection API bases and tokens are future work.
func provideGitLabHandlers(cfg Config, inbox ports.DeliveryInbox, store *gitlabmirror.Store, log ports.Logger) (gitlabHandlers, error) {
	deps := gitlabhandlers.Deps{Inbox: inbox, Store: store}
	switch {
	case cfg.GitLabAPIURL != "" && cfg.GitLabAPIToken != "":
		token := cfg.GitLabAPIToken
		client, err := gitlabapi.New(gitlabapi.Config{BaseURL: cfg.GitLabAPIURL,
			Token: func(context.Context) (string, error) { return token, nil }})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGitLabAPIURL, err)
		}
		deps.Reader = client
	case cfg.GitLabAPIURL != "":
		log.Warnw("GitLab provider reads are off: the API URL is set without a token", "missing", EnvGitLabAPIToken)
	case cfg.GitLabAPIToken != "":
		// The variable's name only, never the token.
		log.Warnw("GitLab provider reads are off: the API token is set without a URL", "missing", EnvGitLabAPIURL)
	}
	return func(reg handlerRegistry) error { return gitlabhandlers.Register(reg, deps) }, nil
}

// gitlabRoutes mounts the GitLab read API.
type gitlabRoutes routeRegistration

func provideGitLabRoutes(manage *management.Service, members ports.WorkspaceStore, store *gitlabmirror.Store, log ports.Logger) gitlabRoutes {
	return func(r gin.IRouter) error {
		return gitlabread.Register(r, gitlabread.Config{Auth: manage, Members: members, Store: store, Log: log})
	}
}

// gitlabPersonData is what the GitLab module declares to person erasure: where its payloads name
// a person, and its mirror store's personal-data map.
type gitlabPersonData personData

func provideGitLabPersonData(store *gitlabmirror.Store) gitlabPersonData {
	return gitlabPersonData{fields: gitlab.PersonFields(), store: store}
}

// provideGitLabMirror is the GitLab mirror store, publishing its merge request changes to the
// change feed shaped as the read API shows them.
func provideGitLabMirror(pool *pgxpool.Pool, changes ports.ChangePublisher) (*gitlabmirror.Store, error) {
	store, err := gitlabmirror.New(pool)
	if err != nil {
		return nil, err
	}
	return store, store.PublishChanges(changes, gitlabread.Views{})
}
