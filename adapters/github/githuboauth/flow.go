package githuboauth

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// FlowConfig configures the GitHub App install flow (CONTRACT.md "Install flows").
type FlowConfig struct {
	// WebURL is GitHub's web and OAuth root (HEPHAESTUS_GITHUB_OAUTH_URL, default
	// https://github.com): the install link's host and the App connection's sourceServerUrl.
	WebURL string
	// AppSlug is the App's URL name (HEPHAESTUS_GITHUB_APP_SLUG); "" turns the flow off.
	AppSlug string
}

// Flow is the GitHub App install: the setup URL's code becomes the person's user token, and the
// App connection is created only when GET /user/installations with that token lists the
// installation id and the person administers the installation's account; the id in the query
// alone is never trusted.
type Flow struct {
	cfg    FlowConfig
	client *Client // nil: flow off
	// sourceServerURL is WebURL canonical (provider.CanonicalServerURL), the spelling admission
	// and erasure compare.
	sourceServerURL string
}

var _ contract.InstallFlow = (*Flow)(nil)

// NewFlow is the flow; client nil turns it off.
func NewFlow(cfg FlowConfig, client *Client) *Flow {
	if cfg.WebURL == "" {
		cfg.WebURL = "https://github.com"
	}
	cfg.WebURL = strings.TrimSuffix(cfg.WebURL, "/")
	source, err := provider.CanonicalServerURL(cfg.WebURL)
	if err != nil {
		source = cfg.WebURL // the connection's creation refuses it with its reason
	}
	return &Flow{cfg: cfg, client: client, sourceServerURL: source}
}

func (f *Flow) Name() string         { return "github-app" }
func (f *Flow) Title() string        { return "GitHub" }
func (f *Flow) CallbackPath() string { return "/connect/github/setup" }
func (f *Flow) Configured() bool     { return f.client != nil && f.cfg.AppSlug != "" }

// AuthorizeURL is the App's installation page with the state.
func (f *Flow) AuthorizeURL(state string) string {
	return f.cfg.WebURL + "/apps/" + url.PathEscape(f.cfg.AppSlug) + "/installations/new?" +
		url.Values{"state": {state}}.Encode()
}

// Precheck: a requested installation waits for an owner's approval; the installation id and
// the code must be present and well-formed.
func (f *Flow) Precheck(q url.Values) *contract.InstallRefusal {
	if q.Get("setup_action") == "request" {
		return &contract.InstallRefusal{Result: contract.InstallRequested, Reason: "installation-requested"}
	}
	if id, err := strconv.ParseInt(q.Get("installation_id"), 10, 64); err != nil || id <= 0 {
		return &contract.InstallRefusal{Result: contract.InstallInvalidLink, Reason: "installation-id-invalid"}
	}
	if q.Get("code") == "" {
		return &contract.InstallRefusal{Result: contract.InstallInvalidLink, Reason: "code-missing"}
	}
	return nil
}

// Carried: the setup URL's parameters the confirmation form carries to Complete.
func (f *Flow) Carried() []string { return []string{"installation_id", "setup_action", "code"} }

// Complete exchanges the code, finds the installation among the person's installations and
// checks that the person administers its account (an organization's active admin, or the user
// account itself): a member or a collaborator, who sees the installation listed too, is refused.
func (f *Flow) Complete(ctx context.Context, q url.Values) (contract.InstallConnection, *contract.InstallRefusal) {
	installationID, _ := strconv.ParseInt(q.Get("installation_id"), 10, 64) // checked by Precheck
	token, err := f.client.ExchangeCode(ctx, q.Get("code"))
	if err != nil {
		return contract.InstallConnection{}, &contract.InstallRefusal{Result: contract.InstallRetry, Reason: "code-exchange-failed", Err: err}
	}
	account, listed, err := f.client.UserInstallation(ctx, token, installationID)
	if err != nil {
		return contract.InstallConnection{}, &contract.InstallRefusal{Result: contract.InstallRetry, Reason: "installations-unavailable", Err: err}
	}
	if !listed {
		return contract.InstallConnection{}, &contract.InstallRefusal{Result: contract.InstallNotListed, Reason: "installation-not-listed"}
	}
	admin, err := f.client.AdministersAccount(ctx, token, account)
	if err != nil {
		return contract.InstallConnection{}, &contract.InstallRefusal{Result: contract.InstallRetry, Reason: "account-admin-unavailable", Err: err}
	}
	if !admin {
		return contract.InstallConnection{}, &contract.InstallRefusal{Result: contract.InstallNotAdmin, Reason: "not-account-admin"}
	}
	return contract.InstallConnection{Kind: github.KindApp.String(), SourceServerURL: f.sourceServerURL,
		Config: map[string]any{"installationId": installationID}}, nil
}
