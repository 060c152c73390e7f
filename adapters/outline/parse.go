package outline

import (
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Parse reads a verified Outline delivery of conn (the URL's connection):
// {"id", "actorId", "webhookSubscriptionId", "createdAt", "event", "payload": {"id", "model"}}.
// Errors: *ports.RejectedError of kind ErrMalformed.
func (w *Webhook) Parse(req ports.Request, conn *ports.SourceConnection) (contract.Envelope, error) {
	body, err := webhookjson.ParseBody(req.Body)
	if err != nil {
		return contract.Envelope{}, err
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
	if env.EventType, err = webhookjson.EventType(event, "envelope without event", "event"); err != nil {
		return contract.Envelope{}, err
	}
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

// Subject kinds.
const (
	subjectDocument   = "document"
	subjectCollection = "collection"
	subjectConnection = "connection"
)

// SubjectKeyDeriver owns Outline's delivery key (the envelope's id) and subjects, by Outline's
// ids: outline:document:<id> for document events and for events about a document (comments,
// shares, revisions name it as model.documentId, so they are ordered with it);
// outline:collection:<id> for collection events; otherwise outline:connection:<ConnectionID>,
// since the connection is the only resource such an event (users.*, groups.*) has here.
// ConnectionID is the URL's connection of the delivery being parsed.
type SubjectKeyDeriver struct {
	ConnectionID int64
}

var _ contract.SubjectKeyDeriver = SubjectKeyDeriver{}

// DeliveryKey is the envelope's id. Errors: ErrMalformed (missing-delivery-id, invalid-delivery-id).
func (SubjectKeyDeriver) DeliveryKey(_ ports.Request, body map[string]any) (string, error) {
	id, _ := webhookjson.Object(body).Str("id")
	return webhookjson.DeliveryKey(id, "envelope without id", "envelope id")
}

// Subject errors: ErrMalformed (invalid-payload for an id it cannot use, missing-connection for
// a connection-wide event without ConnectionID).
func (k SubjectKeyDeriver) Subject(eventType string, body map[string]any) (inbox.Subject, error) {
	payload, model := payloadAndModel(webhookjson.Object(body))
	kind, lookups := subjectDocument, []lookup{{model, "documentId", "payload.model.documentId"}}
	switch {
	case strings.HasPrefix(eventType, "documents."):
		lookups = []lookup{{model, "id", "payload.model.id"}, {payload, "id", "payload.id"}}
	case strings.HasPrefix(eventType, "collections."):
		kind = subjectCollection
		lookups = []lookup{{model, "id", "payload.model.id"}, {payload, "id", "payload.id"}}
	}
	id, found, err := firstID(lookups)
	if err != nil {
		return inbox.Subject{}, err
	}
	if found {
		return subject(kind, id)
	}
	if k.ConnectionID <= 0 {
		return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonMissingConnection, "a connection-wide event needs its connection")
	}
	return subject(subjectConnection, strconv.FormatInt(k.ConnectionID, 10))
}

func payloadAndModel(body webhookjson.Object) (payload, model webhookjson.Object) {
	payload, _ = body.Object("payload")
	model, _ = payload.Object("model")
	return payload, model
}

// lookup names where an Outline id may be; field is its path, for error details.
type lookup struct {
	holder webhookjson.Object
	key    string
	field  string
}

// firstID reads the first lookup that is present. An id is a string; one that is there but
// cannot be an id is an error rather than skipped, so a bad payload is not misrouted.
func firstID(lookups []lookup) (id string, found bool, err error) {
	for _, l := range lookups {
		v, ok := l.holder[l.key]
		if !ok || v == nil {
			continue
		}
		id, ok := v.(string)
		if !ok || !webhookjson.ValidID(id) {
			return "", false, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, l.field+" is not an Outline id")
		}
		return id, true, nil
	}
	return "", false, nil
}

func subject(kind, id string) (inbox.Subject, error) { return webhookjson.Subject(Provider, kind, id) }
