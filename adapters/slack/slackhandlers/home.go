package slackhandlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// appHome handles app_home_opened: it reads the mirror (no transaction, no step: it writes
// nothing) and publishes the user's Home view through the Notifier. views.publish replaces the
// whole view, so a retry publishes the same view again.
func (b base) appHome(ctx context.Context, d ports.Dispatch) error {
	const event = EventAppHomeOpened
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		callback
		Event *struct {
			User string `json:"user"`
			Tab  string `json:"tab"`
		} `json:"event"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.Event == nil || p.Event.User == "" || p.TeamID == "" {
		return malformed(event, "app_home_opened needs a team and a user")
	}
	if b.deps.Notifier == nil || (p.Event.Tab != "" && p.Event.Tab != "home") {
		return nil
	}
	summary, err := b.deps.Store.Home(ctx, ws, p.TeamID, p.Event.User)
	if err != nil {
		return wrap(event, err)
	}
	view, err := homeView(summary)
	if err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.deps.Notifier.PublishHome(ctx, ws, p.TeamID, p.Event.User, view))
}

// homeView is the Block Kit Home tab of a summary.
func homeView(s slackmodel.HomeSummary) (json.RawMessage, error) {
	text := fmt.Sprintf("*Hephaestus*\nMirrored channels: %d\nYour open mentor turns: %d", s.MirroredChannels, s.OpenTurns)
	return json.Marshal(map[string]any{
		"type": "home",
		"blocks": []any{
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}},
		},
	})
}
