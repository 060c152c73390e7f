// Package installflow holds the provider install flows of CONTRACT.md ("Install flows"): a
// workspace ADMIN asks for an install link, the provider sends the person back with a code and
// the signed state, and the connection is created only when the provider itself vouches for it
// (GitHub lists the installation for the person's user token; Slack completes its OAuth v2
// exchange). The state is HMAC-signed, bound to the workspace and the principal, expires after
// an hour and is single-use on every server (its nonce is recorded in the database).
//
// The connection is created through management.Service.CreateVerifiedInstallConnection, the
// same use case the API's connection creation runs, as the instance administrator would: the
// provider's verification stands in for the operator.
package installflow

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Labels of the two flows, carried in the state so one flow's state never completes the other.
const (
	flowGitHub = "github-app"
	flowSlack  = "slack"
)

// DefaultStateTTL is how long an install link stays valid.
const DefaultStateTTL = time.Hour

// DefaultSlackScopes are the bot scopes the Slack install asks for: what the Slack handlers
// read (channel and DM history, channels, users, the team) and write (notices, App Home).
var DefaultSlackScopes = []string{
	"app_mentions:read", "channels:history", "channels:read", "chat:write", "groups:history",
	"groups:read", "im:history", "im:read", "im:write", "team:read", "users:read",
}

// Config configures the flows. A flow whose settings are missing is off: starting it answers
// 409 install-flow-not-configured.
type Config struct {
	// StateKey signs states (at least MinStateKeyLength bytes; every server needs the same).
	StateKey []byte
	// StateTTL is how long a state verifies (default DefaultStateTTL).
	StateTTL time.Duration
	// GitHubWebURL is GitHub's web and OAuth root (HEPHAESTUS_GITHUB_OAUTH_URL, default
	// https://github.com): the install link's host and the App connection's sourceServerUrl.
	GitHubWebURL string
	// GitHubAppSlug is the App's URL name (HEPHAESTUS_GITHUB_APP_SLUG); "" turns the flow off.
	GitHubAppSlug string
	// SlackAuthorizeURL is Slack's OAuth v2 authorize page (default
	// https://slack.com/oauth/v2/authorize).
	SlackAuthorizeURL string
	// SlackClientID is the Slack app's client id; "" turns the flow off.
	SlackClientID string
	// SlackScopes are the bot scopes requested (default DefaultSlackScopes).
	SlackScopes []string
	// PublicURL is the server's external base URL (HEPHAESTUS_PUBLIC_URL); when set, the Slack
	// link names {PublicURL}/connect/slack/callback as its redirect_uri.
	PublicURL string
}

func (c *Config) setDefaults() {
	if c.StateTTL <= 0 {
		c.StateTTL = DefaultStateTTL
	}
	if c.GitHubWebURL == "" {
		c.GitHubWebURL = "https://github.com"
	}
	c.GitHubWebURL = strings.TrimSuffix(c.GitHubWebURL, "/")
	if c.SlackAuthorizeURL == "" {
		c.SlackAuthorizeURL = "https://slack.com/oauth/v2/authorize"
	}
	if len(c.SlackScopes) == 0 {
		c.SlackScopes = DefaultSlackScopes
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
}

func (c Config) validate() error {
	if len(c.StateKey) < MinStateKeyLength {
		return fmt.Errorf("installflow: the state key must have at least %d bytes", MinStateKeyLength)
	}
	return nil
}

// SlackSourceServerURL is the sourceServerUrl of Slack connections made by the flow.
const SlackSourceServerURL = "https://slack.com"

// Service runs the install flows. It is safe for concurrent use.
type Service struct {
	cfg    Config
	mgmt   *management.Service
	states ports.InstallStateStore
	github ports.GitHubInstallAuthority // nil: GitHub flow off
	slack  ports.SlackInstallAuthority  // nil: Slack flow off
	clock  ports.Clock
	log    ports.Logger
}

// New builds the service. github or slack may be nil, which turns that flow off.
func New(cfg Config, mgmt *management.Service, states ports.InstallStateStore,
	github ports.GitHubInstallAuthority, slack ports.SlackInstallAuthority, clock ports.Clock, log ports.Logger,
) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if mgmt == nil || states == nil || clock == nil || log == nil {
		return nil, errors.New("installflow: management, state store, clock and logger are required")
	}
	return &Service{cfg: cfg, mgmt: mgmt, states: states, github: github, slack: slack, clock: clock, log: log}, nil
}

func notConfigured() error {
	return ports.Reject(ports.ErrConflict, "install-flow-not-configured", "")
}

// newState signs a fresh state for flow, bound to the managed workspace and its caller.
func (s *Service) newState(flow string, m management.Managed) (string, error) {
	nonce, err := newNonce()
	if err != nil {
		return "", fmt.Errorf("install state nonce: %w", err)
	}
	p := m.Principal()
	return sign(s.cfg.StateKey, state{
		Provider: flow, Workspace: m.Workspace().ID, Slug: m.Workspace().Slug,
		Account: p.AccountID, AdminToken: p.IsAdminToken(), Nonce: nonce,
		Expires: s.clock.Now().Add(s.cfg.StateTTL).Unix(),
	})
}

// StartGitHub is the GitHub App install link for the managed workspace (its ADMIN or the
// instance administrator). Errors: ports.ErrConflict "install-flow-not-configured".
func (s *Service) StartGitHub(_ context.Context, m management.Managed) (string, error) {
	if s.github == nil || s.cfg.GitHubAppSlug == "" {
		return "", notConfigured()
	}
	st, err := s.newState(flowGitHub, m)
	if err != nil {
		return "", err
	}
	return s.cfg.GitHubWebURL + "/apps/" + url.PathEscape(s.cfg.GitHubAppSlug) + "/installations/new?" +
		url.Values{"state": {st}}.Encode(), nil
}

// StartSlack is the Slack OAuth v2 install link for the managed workspace.
// Errors: ports.ErrConflict "install-flow-not-configured".
func (s *Service) StartSlack(_ context.Context, m management.Managed) (string, error) {
	if s.slack == nil || s.cfg.SlackClientID == "" {
		return "", notConfigured()
	}
	st, err := s.newState(flowSlack, m)
	if err != nil {
		return "", err
	}
	q := url.Values{"client_id": {s.cfg.SlackClientID}, "scope": {strings.Join(s.cfg.SlackScopes, ",")}, "state": {st}}
	if r := s.slackRedirectURI(); r != "" {
		q.Set("redirect_uri", r)
	}
	return s.cfg.SlackAuthorizeURL + "?" + q.Encode(), nil
}

func (s *Service) slackRedirectURI() string {
	if s.cfg.PublicURL == "" {
		return ""
	}
	return s.cfg.PublicURL + "/connect/slack/callback"
}

// Result is how a callback ended; the HTTP adapter turns it into a page.
type Result struct{ s string }

// The results of a callback.
var (
	Connected        = Result{"connected"}
	InvalidLink      = Result{"invalid-link"}      // forged, expired, reused, other workspace, bad parameters
	NotListed        = Result{"not-listed"}        // the installation is not the person's
	AlreadyConnected = Result{"already-connected"} // a live connection has the installation or team
	Retry            = Result{"retry"}             // the provider or the database failed: start again
	Requested        = Result{"requested"}         // GitHub: an owner must approve the installation first
	Declined         = Result{"declined"}          // the person cancelled on the provider's page
)

func (r Result) String() string { return r.s }

// Outcome is a callback's result, with the connection when Connected.
type Outcome struct {
	Result     Result
	Connection ports.StoredConnection
}

// GitHubCallback is the query of GitHub's redirect to the setup URL, as received.
type GitHubCallback struct {
	InstallationID string
	SetupAction    string
	Code           string
	State          string
}

// refuse logs a refusal with its reason (never a code, token or state) and returns result.
func (s *Service) refuse(flow string, result Result, reason string, st state, err error) Outcome {
	kv := []any{"flow", flow, "result", result.String(), "reason", reason}
	if st.Workspace > 0 {
		kv = append(kv, "workspaceId", st.Workspace, "accountId", st.Account, "adminToken", st.AdminToken)
	}
	if err != nil {
		// Error text of the ports carries no secret (their contract); it names the failing step.
		kv = append(kv, "error", err.Error())
	}
	s.log.Warnw("install flow refused", kv...)
	return Outcome{Result: result}
}

// claim verifies the state, re-authorises its principal for its workspace and uses its nonce.
// On refusal it returns the outcome to answer.
func (s *Service) claim(ctx context.Context, flow, raw string) (management.Managed, state, *Outcome) {
	st, err := verify(s.cfg.StateKey, raw, flow, s.clock.Now())
	if err != nil {
		o := s.refuse(flow, InvalidLink, err.Error(), state{}, nil)
		return management.Managed{}, state{}, &o
	}
	p, err := s.mgmt.InstallPrincipal(ctx, st.Account, st.AdminToken)
	if err != nil {
		o := s.refuseErr(flow, "principal-gone", st, err)
		return management.Managed{}, st, &o
	}
	// The person who started the flow must still manage the workspace it was started for.
	m, err := s.mgmt.Manage(ctx, p, st.Slug)
	if err != nil {
		o := s.refuseErr(flow, "workspace-not-managed", st, err)
		return management.Managed{}, st, &o
	}
	if m.Workspace().ID != st.Workspace {
		o := s.refuse(flow, InvalidLink, "workspace-replaced", st, nil)
		return management.Managed{}, st, &o
	}
	if err := s.states.UseInstallState(ctx, st.Nonce, st.expiresAt()); err != nil {
		o := s.refuseErr(flow, "state-reused", st, err)
		return management.Managed{}, st, &o
	}
	return m, st, nil
}

// refuseErr refuses with InvalidLink for the caller's mistakes (not found, forbidden, conflict)
// and Retry for anything else (the database failed).
func (s *Service) refuseErr(flow, reason string, st state, err error) Outcome {
	if errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrForbidden) || errors.Is(err, ports.ErrConflict) {
		return s.refuse(flow, InvalidLink, reason, st, nil)
	}
	return s.refuse(flow, Retry, reason, st, err)
}

// FinishGitHub completes a GitHub App installation: the code becomes the person's user token,
// and the App connection is created only when GET /user/installations with that token lists the
// installation id; the id in the query alone is never trusted.
func (s *Service) FinishGitHub(ctx context.Context, cb GitHubCallback) Outcome {
	if s.github == nil {
		return s.refuse(flowGitHub, InvalidLink, "flow-not-configured", state{}, nil)
	}
	if cb.SetupAction == "request" {
		return s.refuse(flowGitHub, Requested, "installation-requested", state{}, nil)
	}
	installationID, err := strconv.ParseInt(cb.InstallationID, 10, 64)
	if err != nil || installationID <= 0 {
		return s.refuse(flowGitHub, InvalidLink, "installation-id-invalid", state{}, nil)
	}
	if cb.Code == "" {
		return s.refuse(flowGitHub, InvalidLink, "code-missing", state{}, nil)
	}
	m, st, refused := s.claim(ctx, flowGitHub, cb.State)
	if refused != nil {
		return *refused
	}
	token, err := s.github.ExchangeCode(ctx, cb.Code)
	if err != nil {
		return s.refuse(flowGitHub, Retry, "code-exchange-failed", st, err)
	}
	listed, err := s.github.UserHasInstallation(ctx, token, installationID)
	if err != nil {
		return s.refuse(flowGitHub, Retry, "installations-unavailable", st, err)
	}
	if !listed {
		return s.refuse(flowGitHub, NotListed, "installation-not-listed", st, nil)
	}
	return s.create(ctx, flowGitHub, st, m, management.ConnectionRequest{
		Kind:            "GITHUB_APP",
		SourceServerURL: s.cfg.GitHubWebURL,
		Config:          map[string]any{"installationId": installationID},
	})
}

// FinishSlack completes a Slack installation: oauth.v2.access answers the team, the app and the
// bot token, which become the SLACK connection (the token sealed as its secret).
func (s *Service) FinishSlack(ctx context.Context, code, rawState string) Outcome {
	if s.slack == nil {
		return s.refuse(flowSlack, InvalidLink, "flow-not-configured", state{}, nil)
	}
	if code == "" {
		return s.refuse(flowSlack, InvalidLink, "code-missing", state{}, nil)
	}
	m, st, refused := s.claim(ctx, flowSlack, rawState)
	if refused != nil {
		return *refused
	}
	inst, err := s.slack.ExchangeCode(ctx, code, s.slackRedirectURI())
	if err != nil {
		return s.refuse(flowSlack, Retry, "code-exchange-failed", st, err)
	}
	config := map[string]any{"teamId": inst.TeamID}
	if inst.AppID != "" {
		config["appId"] = inst.AppID
	}
	return s.create(ctx, flowSlack, st, m, management.ConnectionRequest{
		Kind: "SLACK", SourceServerURL: SlackSourceServerURL, Config: config, Secret: inst.BotToken,
	})
}

func (s *Service) create(ctx context.Context, flow string, st state, m management.Managed, req management.ConnectionRequest) Outcome {
	c, err := s.mgmt.CreateVerifiedInstallConnection(ctx, m, req)
	switch {
	case errors.Is(err, ports.ErrConflict):
		// installation-already-connected / team-already-connected: the unique index of live
		// connections decided, also against a concurrent flow on another server.
		return s.refuse(flow, AlreadyConnected, "already-connected", st, nil)
	case errors.Is(err, ports.ErrMalformed):
		// The provider answered ids the provider module refuses: nothing is created.
		return s.refuse(flow, Retry, "provider-answer-invalid", st, nil)
	case err != nil:
		return s.refuse(flow, Retry, "create-connection-failed", st, err)
	}
	s.log.Infow("install flow connected", "flow", flow, "workspaceId", st.Workspace, "accountId", st.Account,
		"adminToken", st.AdminToken, "connectionId", c.ID)
	return Outcome{Result: Connected, Connection: c}
}
