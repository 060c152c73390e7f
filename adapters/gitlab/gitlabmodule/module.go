// Package gitlabmodule is the GitLab provider as one module: its webhook, handlers (with the
// REST reads when configured), mirror store (publishing to the change feed), read API and
// person-data rules, built from the shared dependencies bootstrap hands every provider.
package gitlabmodule

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabsync"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Module is GitLab as adapters/providers lists it.
type Module struct {
	gitlab.Module
	cfg Config
}

var _ providerkit.Module = Module{}

// New is the GitLab module with its configuration.
func New(cfg Config) Module { return Module{cfg: cfg} }

// Build makes GitLab's parts.
//
// Provider reads (merge request approvals, backfills) go through the REST adapter when the API
// URL is set; without it the handlers decide readiness from what the payloads carry
// (Deps.Reader nil) and backfills are refused. Each read carries the API token of the
// workspace's own connection (gitlabapi.Credentials): a sync job's connection's, or for a
// handler the connection whose subscription of the project (or its group) is VERIFIED; a
// workspace without one reads nothing.
//
// One API base for the whole server: each GitLab connection may belong to a different GitLab
// instance, and project ids are only unique within an instance. Configure it only when every
// GitLab connection is on that one instance.
func (m Module) Build(deps providerkit.Deps) (contract.Provider, error) {
	providerkit.WarnIgnored(deps.Log, m.cfg.IgnoredVariables)
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
	store, err := providerkit.NewMirror(deps, gitlabmirror.New, gitlabmirror.Views(gitlabread.Views{}))
	if err != nil {
		return nil, err
	}
	handlers := gitlabhandlers.Deps{Inbox: deps.Inbox, Store: store}
	creds := &gitlabapi.Credentials{Store: deps.Secrets}
	// Every subscription is verified with the connection's own API token before it is stored
	// (and rechecked); without an API root nothing can be verified, so nothing is stored.
	access, err := gitlabapi.NewResourceAccess(m.cfg.APIURL, nil)
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITLAB_API_URL: %w", err)
	}
	// A backfill's pages are larger than the handlers' single reads: 8 MiB body bound.
	var history gitlabsync.Reader
	if m.cfg.APIURL != "" {
		client, err := m.client(creds, 0)
		if err != nil {
			return nil, err
		}
		handlers.Reader = client
		if history, err = m.client(creds, 8<<20); err != nil {
			return nil, err
		}
	}
	source, err := gitlabsync.New(history, store)
	if err != nil {
		return nil, err
	}
	return providerkit.Built{
		ProviderModule: m.Module,
		Hook:           hook,
		Register:       func(reg contract.HandlerRegistrar) error { return gitlabhandlers.Register(reg, handlers) },
		Fields:         fields,
		Mirror:         store,
		ReadAPI:        readkit.ReadAPI(gitlabread.Register, gitlabread.Store(store)),
		Sync:           []contract.SyncSource{source},
		Access:         []contract.ResourceAccessChecker{access},
	}, nil
}

// client is the REST client of the configured API root, reading with creds; maxBody 0 keeps
// the client's default body bound.
func (m Module) client(creds *gitlabapi.Credentials, maxBody int64) (*gitlabapi.Client, error) {
	client, err := gitlabapi.New(gitlabapi.Config{BaseURL: m.cfg.APIURL, MaxBodyBytes: maxBody, Token: creds.Token})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITLAB_API_URL: %w", err)
	}
	return client, nil
}
