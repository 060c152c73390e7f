package outline

import "github.com/hephaestus-dev/hephaestus/ports"

var _ ports.RejectionReasoner = Module{}

// RejectionReasons lists every reason the Outline webhook refuses a delivery with
// (webhook_rejected_total{provider="outline",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		ports.ReasonMissingConnection, ports.ReasonNotConfigured, ports.ReasonMissingSignature,
		ports.ReasonMalformedSignature, ports.ReasonMissingTimestamp, ports.ReasonMalformedTimestamp,
		ports.ReasonStaleTimestamp, ports.ReasonBadSignature, ports.ReasonInvalidPayload,
		ports.ReasonMissingEventType, ports.ReasonInvalidEventType, ports.ReasonMissingDeliveryID,
		ports.ReasonInvalidDeliveryID,
	}
}
