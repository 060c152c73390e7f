package outline

import (
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Parse reads a verified Outline delivery of conn (the URL's connection):
// {"id", "actorId", "webhookSubscriptionId", "createdAt", "event", "payload": {"id", "model"}}.
// Errors: *ports.RejectedError of kind ErrMalformed.
func (w *Webhook) Parse(req ports.Request, conn *ports.SourceConnection) (contract.Envelope, error) {
	body, err := webhookjson.Decode(req.Body)
	if err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	keys := SubjectKeyDeriver{}
	if conn != nil {
		keys.ConnectionID = conn.ID
	}
	env := contract.Envelope{Headers: webhookjson.KeptHeaders(req.Headers, keptHeaderNames)}
	if env.DeliveryKey, err = keys.DeliveryKey(req, body); err != nil {
		return contract.Envelope{}, err
	}
	event, _ := body.Str("event")
	if event == "" {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonMissingEventType, "envelope without event")
	}
	if !webhookjson.ValidEventType(event) {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidEventType, "event is not a printable token")
	}
	env.EventType = event
	if _, verb, ok := strings.Cut(event, "."); ok {
		env.Action = verb
	}

	collection, err := collectionOf(event, body)
	if err != nil {
		return contract.Envelope{}, err
	}
	if collection != "" {
		env.Route.Resources = []ports.Resource{{Type: ResourceCollection, ID: collection}}
	} else {
		// No collection to subscribe to: the connection's own workspace receives it.
		env.Route.ConnectionWide = true
	}
	if env.Subject, err = keys.Subject(event, body); err != nil {
		return contract.Envelope{}, err
	}
	return env, nil
}

// collectionOf finds the collection a delivery belongs to: payload.model.collectionId, or
// payload.model.collection.id, or for collections.* events the collection itself
// (payload.model.id, else payload.id). "" means none (a draft, a user, a group).
func collectionOf(event string, body webhookjson.Object) (string, error) {
	payload, model := payloadAndModel(body)
	nested, _ := model.Object("collection")
	lookups := []lookup{
		{model, "collectionId", "payload.model.collectionId"},
		{nested, "id", "payload.model.collection.id"},
	}
	if strings.HasPrefix(event, "collections.") {
		lookups = append(lookups, lookup{model, "id", "payload.model.id"}, lookup{payload, "id", "payload.id"})
	}
	id, _, err := firstID(lookups)
	return id, err
}
