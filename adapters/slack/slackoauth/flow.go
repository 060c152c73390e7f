package slackoauth

import (
	"context"
	"net/url"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Install is what Slack's oauth.v2.access answered for a completed installation.
type Install struct {
	TeamID   string
	AppID    string
	BotToken string
}

// DefaultScopes are the bot scopes the Slack install asks for: what the Slack handlers read
// (channel and DM history, channels, users, the team) and write (notices, App Home).
var DefaultScopes = []string{
	"app_mentions:read", "channels:history", "channels:read", "chat:write", "groups:history",
	"groups:read", "im:history", "im:read", "im:write", "team:read", "users:read",
}

// SourceServerURL is the sourceServerUrl of Slack connections made by the flow.
const SourceServerURL = "https://slack.com"

// FlowConfig configures the Slack install flow (CONTRACT.md "Install flows").
type FlowConfig struct {
	// ClientID is the Slack app's client id; "" (or no client) turns the flow off.
	ClientID string
	// AuthorizeURL is Slack's OAuth v2 authorize page (default
	// https://slack.com/oauth/v2/authorize).
	AuthorizeURL string
	// Scopes are the bot scopes requested (default DefaultScopes).
	Scopes []string
	// PublicURL is the server's external base URL (HEPHAESTUS_PUBLIC_URL); when set, the link
	// names {PublicURL}/connect/slack/callback as its redirect_uri.
	PublicURL string
}

// Flow is the Slack OAuth v2 install: oauth.v2.access answers the team, the app and the bot
// token, which become the SLACK connection (the token sealed as its secret).
type Flow struct {
	cfg    FlowConfig
	client *Client // nil: flow off
}

var _ contract.InstallFlow = (*Flow)(nil)

// NewFlow is the flow; client nil turns it off.
func NewFlow(cfg FlowConfig, client *Client) *Flow {
	if cfg.AuthorizeURL == "" {
		cfg.AuthorizeURL = "https://slack.com/oauth/v2/authorize"
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = DefaultScopes
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	return &Flow{cfg: cfg, client: client}
}

func (f *Flow) Name() string         { return "slack" }
func (f *Flow) Title() string        { return "Slack" }
func (f *Flow) CallbackPath() string { return "/connect/slack/callback" }
func (f *Flow) Configured() bool     { return f.client != nil && f.cfg.ClientID != "" }

// AuthorizeURL is Slack's authorize page with the client id, the scopes and the state.
func (f *Flow) AuthorizeURL(state string) string {
	q := url.Values{"client_id": {f.cfg.ClientID}, "scope": {strings.Join(f.cfg.Scopes, ",")}, "state": {state}}
	if r := f.redirectURI(); r != "" {
		q.Set("redirect_uri", r)
	}
	return f.cfg.AuthorizeURL + "?" + q.Encode()
}

func (f *Flow) redirectURI() string {
	if f.cfg.PublicURL == "" {
		return ""
	}
	return f.cfg.PublicURL + f.CallbackPath()
}

// Precheck: an error parameter means the person declined on Slack's page; no code is a
// malformed callback.
func (f *Flow) Precheck(q url.Values) *contract.InstallRefusal {
	if q.Get("error") != "" {
		return &contract.InstallRefusal{Result: contract.InstallDeclined, Reason: "declined"}
	}
	if q.Get("code") == "" {
		return &contract.InstallRefusal{Result: contract.InstallInvalidLink, Reason: "code-missing"}
	}
	return nil
}

// Carried: the callback's parameters the confirmation form carries to Complete.
func (f *Flow) Carried() []string { return []string{"code"} }

// Complete exchanges the code for the installation.
func (f *Flow) Complete(ctx context.Context, q url.Values) (contract.InstallConnection, *contract.InstallRefusal) {
	inst, err := f.client.ExchangeCode(ctx, q.Get("code"), f.redirectURI())
	if err != nil {
		return contract.InstallConnection{}, &contract.InstallRefusal{Result: contract.InstallRetry, Reason: "code-exchange-failed", Err: err}
	}
	config := map[string]any{"teamId": inst.TeamID}
	if inst.AppID != "" {
		config["appId"] = inst.AppID
	}
	return contract.InstallConnection{Kind: slack.Kind.String(), SourceServerURL: SourceServerURL, Config: config, Secret: inst.BotToken}, nil
}
