package githuboauth

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/ports"
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
// installation id; the id in the query alone is never trusted.
type Flow struct {
	cfg    FlowConfig
	client *Client // nil: flow off
}

var _ ports.InstallFlow = (*Flow)(nil)

// NewFlow is the flow; client nil turns it off.
func NewFlow(cfg FlowConfig, client *Client) *Flow {
	if cfg.WebURL == "" {
		cfg.WebURL = "https://github.com"
	}
	cfg.WebURL = strings.TrimSuffix(cfg.WebURL, "/")
	return &Flow{cfg: cfg, client: client}
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
func (f *Flow) Precheck(q url.Values) *ports.InstallRefusal {
	if q.Get("setup_action") == "request" {
		return &ports.InstallRefusal{Result: ports.InstallRequested, Reason: "installation-requested"}
	}
	if id, err := strconv.ParseInt(q.Get("installation_id"), 10, 64); err != nil || id <= 0 {
		return &ports.InstallRefusal{Result: ports.InstallInvalidLink, Reason: "installation-id-invalid"}
	}
	if q.Get("code") == "" {
		return &ports.InstallRefusal{Result: ports.InstallInvalidLink, Reason: "code-missing"}
	}
	return nil
}

// Complete exchanges the code and asks GitHub whether the person's installations list the id.
func (f *Flow) Complete(ctx context.Context, q url.Values) (ports.InstallConnection, *ports.InstallRefusal) {
	installationID, _ := strconv.ParseInt(q.Get("installation_id"), 10, 64) // checked by Precheck
	token, err := f.client.ExchangeCode(ctx, q.Get("code"))
	if err != nil {
		return ports.InstallConnection{}, &ports.InstallRefusal{Result: ports.InstallRetry, Reason: "code-exchange-failed", Err: err}
	}
	listed, err := f.client.UserHasInstallation(ctx, token, installationID)
	if err != nil {
		return ports.InstallConnection{}, &ports.InstallRefusal{Result: ports.InstallRetry, Reason: "installations-unavailable", Err: err}
	}
	if !listed {
		return ports.InstallConnection{}, &ports.InstallRefusal{Result: ports.InstallNotListed, Reason: "installation-not-listed"}
	}
	return ports.InstallConnection{Kind: github.KindApp.String(), SourceServerURL: f.cfg.WebURL,
		Config: map[string]any{"installationId": installationID}}, nil
}
