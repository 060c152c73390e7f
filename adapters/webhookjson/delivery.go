package webhookjson

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// ParseBody is Decode of a verified delivery's body, refused as a malformed delivery.
// Errors: *ports.RejectedError of kind ErrMalformed (invalid-payload).
func ParseBody(body []byte) (Object, error) {
	o, err := Decode(body)
	if err != nil {
		return nil, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	return o, nil
}

// EventType accepts event as a delivery's event type; missing is the refusal's detail when it
// is empty, name says where it was read from. Errors: *ports.RejectedError of kind
// ErrMalformed (missing-event-type, invalid-event-type).
func EventType(event, missing, name string) (string, error) {
	if event == "" {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonMissingEventType, missing)
	}
	if !ValidEventType(event) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidEventType, name+" is not a printable token")
	}
	return event, nil
}

// DeliveryKey accepts key as a delivery key; missing is the refusal's detail when it is empty,
// name says where it was read from. Errors: *ports.RejectedError of kind ErrMalformed
// (missing-delivery-id, invalid-delivery-id).
func DeliveryKey(key, missing, name string) (string, error) {
	if key == "" {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonMissingDeliveryID, missing)
	}
	if !ValidDeliveryID(key) {
		return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidDeliveryID, name+" is not a printable token of at most 200 bytes")
	}
	return key, nil
}

// Subject is the scope <provider>:<kind>:<id> of p's delivery. Errors: *ports.RejectedError of
// kind ErrMalformed (invalid-payload) for a kind or id a subject cannot hold.
func Subject(p provider.Provider, kind, id string) (inbox.Subject, error) {
	s, err := inbox.NewSubject(p.Label(), kind, id)
	if err != nil {
		return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, fmt.Sprintf("subject: %v", err))
	}
	return s, nil
}
