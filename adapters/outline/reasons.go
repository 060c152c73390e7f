package outline

import "github.com/hephaestus-dev/hephaestus/ports/contract"

var _ contract.RejectionReasoner = Module{}

// RejectionReasons lists every reason the Outline webhook refuses a delivery with
// (webhook_rejected_total{provider="outline",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonMissingConnection, contract.ReasonNotConfigured, contract.ReasonMissingSignature,
		contract.ReasonMalformedSignature, contract.ReasonMissingTimestamp, contract.ReasonMalformedTimestamp,
		contract.ReasonStaleTimestamp, contract.ReasonBadSignature, contract.ReasonInvalidPayload,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonMissingDeliveryID,
		contract.ReasonInvalidDeliveryID,
	}
}
