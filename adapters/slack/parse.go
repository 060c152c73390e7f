package slack

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
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
	body, err := webhookjson.Decode(req.Body)
	if err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
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
	if eventType == "" {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonMissingEventType, "event without type")
	}
	if !webhookjson.ValidEventType(eventType) {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidEventType, "event type is not a printable token")
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
