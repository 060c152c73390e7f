// Package slack is the receiving side of the Slack Events API. One Slack app posts every team's
// events to /webhooks/slack, signed with the app's signing secret; a delivery is routed by its
// team_id to the Slack connections of that team, and by its channel to their subscriptions.
package slack

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Provider is Slack.
var Provider = provider.MustNew("SLACK")

// Kind is a Slack team connection, config {"teamId": "T…", "appId": "A…"}; its source key is
// the team id. It has no URL and no secret of its own: the app's signing secret is configuration.
var Kind = connection.MustKind(connection.KindSpec{Name: "SLACK", Provider: Provider, AlreadyConnected: "team-already-connected"})

// ResourceChannel is the one subscription resource type: a Slack channel id.
const ResourceChannel = "channel"

// Module is Slack's contribution besides its webhook.
type Module struct{}

var _ contract.ProviderModule = Module{}

func (Module) Provider() provider.Provider { return Provider }

func (Module) Kinds() []connection.Kind { return []connection.Kind{Kind} }

func (Module) ResourceTypes() []string { return []string{ResourceChannel} }

// ValidateConfig requires teamId (the source key every event's team_id is matched against);
// appId is optional but must be a Slack id when given. Errors: ErrMalformed.
func (Module) ValidateConfig(kind connection.Kind, config map[string]any) (string, error) {
	if kind.Provider() != Provider || kind.String() != Kind.String() {
		return "", ports.Reject(ports.ErrMalformed, "unknown-kind", fmt.Sprintf("%s is not a Slack connection kind", kind))
	}
	team, ok := config["teamId"].(string)
	if !ok || !webhookjson.ValidID(team) {
		return "", ports.Reject(ports.ErrMalformed, "invalid-config", "teamId must be a Slack team id")
	}
	if app, ok := config["appId"]; ok && app != nil {
		if s, ok := app.(string); !ok || !webhookjson.ValidID(s) {
			return "", ports.Reject(ports.ErrMalformed, "invalid-config", "appId must be a Slack app id")
		}
	}
	return team, nil
}
