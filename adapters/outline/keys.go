package outline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

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
	id, ok := webhookjson.Object(body).Str("id")
	if !ok || id == "" {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonMissingDeliveryID, "envelope without id")
	}
	if !webhookjson.ValidDeliveryID(id) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidDeliveryID, "envelope id is not a printable token of at most 200 bytes")
	}
	return id, nil
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

func subject(kind, id string) (inbox.Subject, error) {
	s, err := inbox.NewSubject(Provider.Label(), kind, id)
	if err != nil {
		return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, fmt.Sprintf("subject: %v", err))
	}
	return s, nil
}
