// Package slackmodule is the Slack provider as one module: its webhook, handlers (with the Web
// API for notices and App Home views), mirror store (publishing messages to the change feed and
// connection states through the connection store), read API, person-data rules, and the
// client of its OAuth install flow, built from the shared dependencies bootstrap hands every
// provider.
package slackmodule

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackoauth"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slacksync"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Module is Slack as adapters/providers lists it.
type Module struct {
	slack.Module
	cfg Config
}

var _ providerkit.Module = Module{}

// New is the Slack module with its configuration; what cfg leaves unset takes its default.
func New(cfg Config) Module {
	cfg.setDefaults()
	return Module{cfg: cfg}
}

// Build makes Slack's parts. The join notice and App Home views (external effects, repeatable
// after a crash) go through the Web API with the bot token of the workspace's connection of the
// team (stored sealed by the Slack install flow, or given as the secret when the instance
// administrator creates the connection); the configured bot token is only the fallback. A team
// with neither gets no Web API call; every database step runs as specified either way. The
// backfill of a consented channel reads its history with that token (slacksync); a team
// without one has its backfills refused.
func (m Module) Build(deps providerkit.Deps) (contract.Provider, error) {
	// The payload fields and the read API's view members: one declaration for the inbox,
	// the mirror's views and the change feed.
	fields, err := slackread.PersonFields()
	if err != nil {
		return nil, err
	}
	hook, err := slack.NewWebhook(slack.Config{SigningSecret: m.cfg.SigningSecret})
	if err != nil {
		return nil, err
	}
	store, err := providerkit.NewMirror(deps, slackmirror.New, slackmirror.Views(slackread.Views{}))
	if err != nil {
		return nil, err
	}
	stored := func(ctx context.Context, workspaceID int64, teamID string) (string, bool, error) {
		token, found, err := deps.Secrets.LiveSecret(ctx, workspaceID, slack.Kind, teamID)
		return string(token), found, err
	}
	client, err := webapi.New(webapi.Config{BaseURL: m.cfg.APIURL, Token: webapi.StoredTokens(stored, m.cfg.BotToken)})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_SLACK_API_URL: %w", err)
	}
	handlers := slackhandlers.Deps{Inbox: deps.Inbox, Store: store, Log: deps.Log, Notifier: client}
	var oauth *slackoauth.Client
	if m.cfg.ClientID != "" {
		if oauth, err = slackoauth.New(slackoauth.Config{APIURL: m.cfg.APIURL, ClientID: m.cfg.ClientID, ClientSecret: m.cfg.ClientSecret}); err != nil {
			return nil, err
		}
	}
	// A channel's backfill reads its history with the bot token of the workspace's own
	// connection of the team only: never HEPHAESTUS_SLACK_BOT_TOKEN, which is instance-wide
	// (CONTRACT.md "Provider access"). It is the fallback of the join notice and App Home
	// views alone.
	reader, err := webapi.New(webapi.Config{BaseURL: m.cfg.APIURL, Token: webapi.StoredTokens(stored, "")})
	if err != nil {
		return nil, fmt.Errorf("HEPHAESTUS_SLACK_API_URL: %w", err)
	}
	source, err := slacksync.New(reader, store)
	if err != nil {
		return nil, err
	}
	// Every channel subscription is verified with the team's bot token of that connection.
	access, err := webapi.NewChannelAccess(reader)
	if err != nil {
		return nil, err
	}
	install := slackoauth.NewFlow(slackoauth.FlowConfig{ClientID: m.cfg.ClientID, PublicURL: m.cfg.PublicURL}, oauth)
	return providerkit.Built{
		ProviderModule: m.Module,
		Hook:           hook,
		Register:       func(reg contract.HandlerRegistrar) error { return slackhandlers.Register(reg, handlers) },
		Fields:         fields,
		Mirror:         store,
		ReadAPI:        readkit.ReadAPI(slackread.Register, slackread.Store(store)),
		Sync:           []contract.SyncSource{source},
		Access:         []contract.ResourceAccessChecker{access},
		Installs:       []contract.InstallFlow{install},
	}, nil
}
