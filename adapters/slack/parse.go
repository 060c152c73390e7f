package slack

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/jsonscan"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Outer envelope types of the Events API.
const (
	typeURLVerification = "url_verification"
	typeEventCallback   = "event_callback"
)

// DropUnsupportedType: a verified delivery of another outer type (app_rate_limited, …) that
// carries no event to store.
const DropUnsupportedType = "unsupported-type"

// Parse reads a verified Slack delivery. conn is ignored (Slack is not per connection).
// Errors: *ports.RejectedError of kind ErrMalformed.
func (w *Webhook) Parse(req ports.Request, _ *ports.SourceConnection) (contract.Envelope, error) {
	body, err := webhookjson.ParseBody(req.Body)
	if err != nil {
		return contract.Envelope{}, err
	}
	env := contract.Envelope{Headers: webhookjson.KeptHeaders(req.Headers, keptHeaderNames)}
	outer, _ := body.Str("type")
	if webhookjson.ValidEventType(outer) {
		env.EventType = outer
	}
	switch outer {
	case typeURLVerification:
		return urlVerification(env, body)
	case typeEventCallback:
	default:
		env.DropReason = DropUnsupportedType
		return env, nil
	}

	keys := SubjectKeyDeriver{}
	if env.DeliveryKey, err = keys.DeliveryKey(req, body); err != nil {
		return contract.Envelope{}, err
	}
	team, err := teamOf(body)
	if err != nil {
		return contract.Envelope{}, err
	}
	event, ok := body.Object("event")
	if !ok {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "event_callback without an event object")
	}
	eventType, _ := event.Str("type")
	if eventType, err = webhookjson.EventType(eventType, "event without type", "event type"); err != nil {
		return contract.Envelope{}, err
	}
	// A message keeps EventType "message" whatever its subtype, so one handler sees edits and
	// deletions in order with the message itself; the subtype is only for logs.
	env.EventType = eventType
	if subtype, ok := event.Str("subtype"); ok && webhookjson.ValidEventType(subtype) {
		env.Action = subtype
	}

	channel, err := channelOf(event)
	if err != nil {
		return contract.Envelope{}, err
	}
	env.Route = ports.RouteSpec{SourceKind: Kind.String(), SourceKey: team}
	if channel == "" || isDirect(event, channel) {
		// Team-wide events and direct messages go to the team's connections themselves.
		env.Route.ConnectionWide = true
	} else {
		env.Route.Resources = []ports.Resource{{Type: ResourceChannel, ID: channel}}
	}
	if env.Subject, err = keys.Subject(eventType, body); err != nil {
		return contract.Envelope{}, err
	}
	if env.Payload, err = withoutCredentials(req.Body, body); err != nil {
		return contract.Envelope{}, err
	}
	return env, nil
}

// credentialMembers are the envelope's members that are credentials: token is the app's
// verification token, the same for every team, which would let anyone who reads a stored payload
// (any member of a workspace, in the delivery detail or the console) pass as Slack to an
// endpoint that still checks it. The rest of the envelope (team_id, api_app_id, event_id,
// authorizations, event_context, event) names things, it authenticates nothing.
var credentialMembers = []string{"token"}

// withoutCredentials answers the body to store when it carries a credential member (nil when it
// does not, so the body is stored as received). It runs after Verify: the signature covers the
// raw body, credentials included.
func withoutCredentials(raw []byte, body webhookjson.Object) ([]byte, error) {
	if !slices.ContainsFunc(credentialMembers, func(name string) bool { _, ok := body[name]; return ok }) {
		return nil, nil
	}
	o, err := jsonscan.ParseObject(raw)
	if err != nil {
		return nil, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	stripped, _ := o.Without(credentialMembers...)
	return stripped, nil
}

// urlVerification answers Slack's endpoint check with its challenge; nothing is stored.
func urlVerification(env contract.Envelope, body webhookjson.Object) (contract.Envelope, error) {
	challenge, ok := body.Str("challenge")
	if !ok || challenge == "" {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "url_verification without challenge")
	}
	answer, err := json.Marshal(map[string]string{"challenge": challenge})
	if err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	env.Immediate = &contract.Immediate{Status: http.StatusOK, ContentType: "application/json", Body: answer}
	return env, nil
}

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
	id, _ := webhookjson.Object(body).Str("event_id")
	return webhookjson.DeliveryKey(id, "event_callback without event_id", "event_id")
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

func subject(kind, id string) (inbox.Subject, error) { return webhookjson.Subject(Provider, kind, id) }
