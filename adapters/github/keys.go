package github

import (
	"fmt"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// SubjectKeyDeriver owns GitHub's delivery key (X-GitHub-Delivery, the same on every
// redelivery) and subjects. A subject names a resource by GitHub's numeric id, never its name,
// so a repository keeps its scope across a rename or a transfer; it never holds the event type,
// action or delivery id, so every event of a repository is ordered in one scope.
type SubjectKeyDeriver struct{}

var _ contract.SubjectKeyDeriver = SubjectKeyDeriver{}

// DeliveryKey is X-GitHub-Delivery. Errors: ErrMalformed (missing-delivery-id, invalid-delivery-id).
func (SubjectKeyDeriver) DeliveryKey(req ports.Request, _ map[string]any) (string, error) {
	key := strings.TrimSpace(deliveryHeader.get(req.Headers))
	if key == "" {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonMissingDeliveryID, headerDelivery+" is missing")
	}
	if !webhookjson.ValidDeliveryID(key) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidDeliveryID, headerDelivery+" is not a printable token of at most 200 bytes")
	}
	return key, nil
}

// Subject is github:installation:<id> for a control event (it lands in the one system scope
// anyway), github:repository:<id> for an event with a repository, otherwise
// github:organization:<id>. Errors: ErrMalformed (invalid-event-route for a control event
// without installation.id, invalid-payload for an unusable id, no-repository-or-organization).
func (k SubjectKeyDeriver) Subject(eventType string, body map[string]any) (inbox.Subject, error) {
	return k.subject(eventType, object(body))
}

// nestedIDs reads key.id of a body, decoded (object) or not (members).
type nestedIDs interface {
	nestedID(key string) (id string, present bool, valid bool)
}

func (SubjectKeyDeriver) subject(eventType string, o nestedIDs) (inbox.Subject, error) {
	if IsControlEvent(eventType) {
		id, _, ok := o.nestedID("installation")
		if !ok {
			return inbox.Subject{}, ports.Reject(ports.ErrMalformed, reasonInvalidEventRoute, "control event without installation.id")
		}
		return subject("installation", id)
	}
	for _, kind := range []string{ResourceRepository, ResourceOrganization} {
		id, present, ok := o.nestedID(kind)
		if !present {
			continue
		}
		if !ok {
			return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, kind+".id is not a positive integer")
		}
		return subject(kind, id)
	}
	return inbox.Subject{}, ports.Reject(ports.ErrMalformed, DropNoRepositoryOrOrg, "event names neither a repository nor an organization")
}

func subject(kind, id string) (inbox.Subject, error) {
	s, err := inbox.NewSubject(Provider.Label(), kind, id)
	if err != nil {
		return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, fmt.Sprintf("subject: %v", err))
	}
	return s, nil
}
