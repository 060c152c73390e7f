package slack

import (
	"fmt"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Subject kinds.
const (
	subjectChannel = "channel"
	subjectTeam    = "team"
)

// SubjectKeyDeriver owns Slack's delivery key (event_id, the same on Slack's retries) and
// subjects: slack:channel:<id> for an event in a channel, slack:team:<team id> for team-wide
// events and for direct messages. A direct-message conversation is scoped by its team, not its
// channel id: the mentor's conversations are per team, and the id of a person's DM channel is
// kept out of scope keys as it is kept out of step names.
type SubjectKeyDeriver struct{}

var _ contract.SubjectKeyDeriver = SubjectKeyDeriver{}

// DeliveryKey is the event_id of an event_callback.
// Errors: ErrMalformed (missing-delivery-id, invalid-delivery-id).
func (SubjectKeyDeriver) DeliveryKey(_ ports.Request, body map[string]any) (string, error) {
	id, ok := webhookjson.Object(body).Str("event_id")
	if !ok || id == "" {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonMissingDeliveryID, "event_callback without event_id")
	}
	if !webhookjson.ValidDeliveryID(id) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidDeliveryID, "event_id is not a printable token of at most 200 bytes")
	}
	return id, nil
}

// Subject errors: ErrMalformed (missing-team, invalid-payload).
func (SubjectKeyDeriver) Subject(_ string, body map[string]any) (inbox.Subject, error) {
	o := webhookjson.Object(body)
	team, err := teamOf(o)
	if err != nil {
		return inbox.Subject{}, err
	}
	event, _ := o.Object("event")
	channel, err := channelOf(event)
	if err != nil {
		return inbox.Subject{}, err
	}
	if channel == "" || isDirect(event, channel) {
		return subject(subjectTeam, team)
	}
	return subject(subjectChannel, channel)
}

func teamOf(body webhookjson.Object) (string, error) {
	team, ok := body.Str("team_id")
	if !ok || team == "" {
		return "", ports.Reject(ports.ErrMalformed, reasonMissingTeam, "event_callback without team_id")
	}
	if !webhookjson.ValidID(team) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "team_id is not a Slack id")
	}
	return team, nil
}

// channelOf finds the channel an event happened in: event.channel (a string, or an object with
// an id for channel_created / channel_rename), event.channel_id (file events), or
// event.item.channel (reactions, stars, pins). "" means a team-wide event.
func channelOf(event webhookjson.Object) (string, error) {
	raw := event["channel"]
	if ch, ok := raw.(map[string]any); ok {
		raw = ch["id"]
	}
	if raw == nil {
		raw = event["channel_id"]
	}
	if raw == nil {
		item, _ := event.Object("item")
		raw = item["channel"]
	}
	if raw == nil {
		return "", nil
	}
	id, ok := raw.(string)
	if !ok || !webhookjson.ValidID(id) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "the event's channel is not a Slack channel id")
	}
	return id, nil
}

// isDirect tells a direct message (D… channel, channel_type im) or a group direct message
// (channel_type mpim) from a channel a workspace can subscribe to.
func isDirect(event webhookjson.Object, channel string) bool {
	kind, _ := event.Str("channel_type")
	return strings.HasPrefix(channel, "D") || kind == "im" || kind == "mpim"
}

func subject(kind, id string) (inbox.Subject, error) {
	s, err := inbox.NewSubject(Provider.Label(), kind, id)
	if err != nil {
		return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, fmt.Sprintf("subject: %v", err))
	}
	return s, nil
}
