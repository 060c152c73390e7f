// Package githubmodule is the GitHub provider as one module: its webhook, App authentication,
// handlers (with the REST reads), mirror store (publishing to the change feed and connection
// states through the connection store), read API, person-data rules, the PAT access checker
// and the redelivery reconciler, built from the shared dependencies bootstrap hands every
// provider (providerkit.Deps).
package githubmodule

import (
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githuboauth"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubredelivery"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubsync"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Module is GitHub as adapters/providers lists it.
type Module struct {
	github.Module
	cfg Config
}

var _ providerkit.Module = Module{}

// New is the GitHub module with its configuration; what cfg leaves unset takes its default.
func New(cfg Config) Module {
	cfg.setDefaults()
	return Module{cfg: cfg}
}

// built is GitHub's parts: the common ones plus the reconciler and the source namespace of
// installations.
type built struct {
	providerkit.Built
	runners []ports.Runner
	webURL  string
}

func (b built) Runners() []ports.Runner        { return b.runners }
func (b built) DefaultSourceServerURL() string { return b.webURL }

var (
	_ contract.BackgroundWork     = built{}
	_ contract.InstallationSource = built{}
)

// Build makes GitHub's parts.
//
// Provider reads (check runs, commits a push payload left out) go through the REST adapter
// when App authentication is configured; without it the handlers mirror what the payloads
// carry (Deps.Reader nil). Each read carries a credential of the row's workspace's own
// connection (githubapi.Credentials): the installation token of the delivery's installation
// for an App workspace, the verified PAT for a PAT workspace; a workspace with neither reads
// nothing. No instance-wide token exists. With App authentication the installation handler verifies the installation's
// status with the App, and the redelivery reconciler runs.
func (m Module) Build(deps providerkit.Deps) (contract.Provider, error) {
	providerkit.WarnIgnored(deps.Log, m.cfg.IgnoredVariables)
	// The payload fields and the read API's view members: one declaration for the inbox,
	// the mirror's views and the change feed.
	fields, err := githubread.PersonFields()
	if err != nil {
		return nil, err
	}
	hook, err := github.NewWebhook(github.Config{WebhookSecret: m.cfg.WebhookSecret, AppID: m.cfg.AppID})
	if err != nil {
		return nil, err
	}
	access, err := githubapi.NewRepositoryAccess(githubapi.AccessConfig{BaseURL: m.cfg.APIURL})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITHUB_API_URL: %w", err)
	}
	app, err := m.app()
	if err != nil {
		return nil, err
	}
	// An App connection's subscriptions are verified with its own installation's token.
	appAccess, err := githubapi.NewAppResourceAccess(githubapi.AccessConfig{BaseURL: m.cfg.APIURL}, app, deps.Secrets)
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITHUB_API_URL: %w", err)
	}
	store, err := providerkit.NewMirror(deps, githubmirror.New, githubmirror.Views(githubread.Views{}))
	if err != nil {
		return nil, err
	}
	handlers := githubhandlers.Deps{Inbox: deps.Inbox, Store: store, Log: deps.Log}
	creds := &githubapi.Credentials{App: app, Store: deps.Secrets}
	client, err := githubapi.New(githubapi.Config{BaseURL: m.cfg.APIURL, Token: creds.Token, Rejected: creds.Rejected})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITHUB_API_URL: %w", err)
	}
	if app != nil {
		// Without App authentication the handlers read nothing and mirror the payloads, as
		// they did without a static token (no extra step per push or pull request).
		handlers.Reader = client
	}
	// A backfill reads with the workspace's credential like the handlers; without one its
	// reads are refused and the job says so.
	source, err := githubsync.New(client, store)
	if err != nil {
		return nil, err
	}
	var runners []ports.Runner
	if app != nil {
		handlers.Installations = app
		r, err := m.reconciler(deps, app)
		if err != nil {
			return nil, err
		}
		runners = append(runners, r)
	}
	install, err := m.installFlow()
	if err != nil {
		return nil, err
	}
	return built{runners: runners, webURL: m.cfg.WebURL, Built: providerkit.Built{
		ProviderModule: m.Module,
		Hook:           hook,
		Register:       func(reg contract.HandlerRegistrar) error { return githubhandlers.Register(reg, handlers) },
		Fields:         fields,
		Mirror:         store,
		ReadAPI: func(r gin.IRouter, g providerkit.Guard) error {
			return githubread.Register(r, githubread.Config{Auth: g.Auth, Members: g.Members, Reader: store, Log: g.Log})
		},
		Sync:     []contract.SyncSource{source},
		Access:   []contract.ResourceAccessChecker{access, appAccess},
		Installs: []contract.InstallFlow{install},
	}}, nil
}

// installFlow is the App install flow, off (no OAuth client) without the slug and client.
func (m Module) installFlow() (*githuboauth.Flow, error) {
	var client *githuboauth.Client
	if m.cfg.ClientID != "" && m.cfg.AppSlug != "" {
		c, err := githuboauth.New(githuboauth.Config{APIURL: m.cfg.APIURL, OAuthURL: m.cfg.WebURL,
			ClientID: m.cfg.ClientID, ClientSecret: m.cfg.ClientSecret})
		if err != nil {
			return nil, err
		}
		client = c
	}
	return githuboauth.NewFlow(githuboauth.FlowConfig{WebURL: m.cfg.WebURL, AppSlug: m.cfg.AppSlug}, client), nil
}

// app is the App authentication of the configured private key and App id; nil without a key.
func (m Module) app() (*githubapi.App, error) {
	if m.cfg.AppPrivateKey == "" {
		return nil, nil
	}
	key, err := githubapi.ParseAppPrivateKey([]byte(m.cfg.AppPrivateKey))
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITHUB_APP_PRIVATE_KEY: %w", err)
	}
	app, err := githubapi.NewApp(githubapi.AppConfig{BaseURL: m.cfg.APIURL, AppID: strconv.FormatInt(m.cfg.AppID, 10), Key: key})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_GITHUB_API_URL: %w", err)
	}
	return app, nil
}

// reconciler is the redelivery reconciler, on the one server holding its singleton lease.
func (m Module) reconciler(deps providerkit.Deps, app *githubapi.App) (*githubredelivery.Reconciler, error) {
	store, err := githubmirror.NewRedeliveries(deps.Pool)
	if err != nil {
		return nil, err
	}
	inc, err := deps.Counter(github.RedeliveriesRequested)
	if err != nil {
		return nil, err
	}
	return githubredelivery.New(githubredelivery.Config{Owner: deps.Owner, Interval: m.cfg.RedeliveryInterval},
		app, store, deps.Lease, githubredelivery.MetricsFunc(inc), deps.Log)
}
