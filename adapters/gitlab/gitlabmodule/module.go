// Package gitlabmodule is the GitLab provider as one module: its webhook, handlers (with the
// REST reads when configured), mirror store (publishing to the change feed), read API and
// person-data rules, built from the shared dependencies bootstrap hands every provider.
package gitlabmodule

import (
	"context"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabsync"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Config is the GitLab instance configuration (CONTRACT.md "Configuration").
type Config struct {
	// APIURL (HEPHAESTUS_GITLAB_API_URL) and APIToken (HEPHAESTUS_GITLAB_API_TOKEN): the REST
	// root and token of the handlers' reads; both empty, or either alone, turns the reads off.
	APIURL, APIToken string
}

// Module is GitLab as bootstrap lists it.
type Module struct {
	gitlab.Module
	cfg Config
}

var _ providerkit.Module = Module{}

// New is the GitLab module with its configuration.
func New(cfg Config) Module { return Module{cfg: cfg} }

// Build makes GitLab's parts.
//
// Provider reads (merge request approvals) go through the REST adapter when both the API URL
// and the token are set; without them the handlers decide readiness from what the payloads
// carry (Deps.Reader nil). With only one of the two set, a warning names the missing one and
// nothing is read.
//
// One API base and one token for the whole server is a simplification: each GitLab connection
// may belong to a different GitLab instance, and project ids are only unique within an
// instance, so with connections on several instances the reads would ask the configured
// instance about another instance's project ids. Configure it only when every GitLab
// connection is on that one instance. Per-connection API bases and tokens are future work.
func (m Module) Build(deps providerkit.Deps) (ports.Provider, error) {
	// The payload fields and the read API's view members: one declaration for the inbox,
	// the mirror's views and the change feed.
	fields, err := gitlabread.PersonFields()
	if err != nil {
		return nil, err
	}
	hook, err := gitlab.NewWebhook(gitlab.Config{})
	if err != nil {
		return nil, err
	}
	store, err := gitlabmirror.New(deps.Pool)
	if err != nil {
		return nil, err
	}
	if err := store.PublishChanges(deps.Changes, gitlabread.Views{}); err != nil {
		return nil, err
	}
	handlers := gitlabhandlers.Deps{Inbox: deps.Inbox, Store: store}
	switch {
	case m.cfg.APIURL != "" && m.cfg.APIToken != "":
		client, err := m.client(0)
		if err != nil {
			return nil, err
		}
		handlers.Reader = client
	case m.cfg.APIURL != "":
		deps.Log.Warnw("GitLab provider reads are off: the API URL is set without a token", "missing", "HEPHAESTUS_GITLAB_API_TOKEN")
	case m.cfg.APIToken != "":
		// The variable's name only, never the token.
		deps.Log.Warnw("GitLab provider reads are off: the API token is set without a URL", "missing", "HEPHAESTUS_GITLAB_API_URL")
	}
	// A backfill reads with the configured token (the connection's own secret is a webhook
	// token, not an API token); without URL and token its reads are refused and the job says
	// so, while teardown still runs. Its pages are larger than the handlers' single reads, so
	// its body bound is 8 MiB.
	var history gitlabsync.Reader
	if m.cfg.APIURL != "" && m.cfg.APIToken != "" {
		client, err := m.client(8 << 20)
		if err != nil {
			return nil, err
		}
		history = client
	}
	source, err := gitlabsync.New(history, store)
	if err != nil {
		return nil, err
	}
	return built{sync: source, Built: providerkit.Built{
		ProviderModule: m.Module,
		Hook:           hook,
		Register:       func(reg ports.HandlerRegistrar) error { return gitlabhandlers.Register(reg, handlers) },
		Fields:         fields,
		Mirror:         store,
		ReadAPI: func(r gin.IRouter, g providerkit.Guard) error {
			return gitlabread.Register(r, gitlabread.Config{Auth: g.Auth, Members: g.Members, Store: store, Log: g.Log})
		},
	}}, nil
}

// built is GitLab's parts: the common ones plus its sync source.
type built struct {
	providerkit.Built
	sync *gitlabsync.Source
}

var _ ports.Syncing = built{}

func (b built) SyncSources() []ports.SyncSource { return []ports.SyncSource{b.sync} }

// client is the REST client of the configured API root and token; maxBody 0 keeps the
// client's default body bound.
func (m Module) client(maxBody int64) (*gitlabapi.Client, error) {
	token := m.cfg.APIToken
	client, err := gitlabapi.New(gitlabapi.Config{BaseURL: m.cfg.APIURL, MaxBodyBytes: maxBody,
		Token: func(context.Context) (string, error) { return token, nil }})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITLAB_API_URL: %w", err)
	}
	return client, nil
}
