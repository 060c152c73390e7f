package slack

import "github.com/hephaestus-dev/hephaestus/ports/contract"

var _ contract.RejectionReasoner = Module{}

// reasonMissingTeam refuses an event_callback without team_id (nothing to route by).
const reasonMissingTeam = "missing-team"

// RejectionReasons lists every reason the Slack webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="slack",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonNotConfigured, contract.ReasonMissingSignature, contract.ReasonMissingTimestamp,
		contract.ReasonMalformedTimestamp, contract.ReasonStaleTimestamp, contract.ReasonMalformedSignature,
		contract.ReasonBadSignature, contract.ReasonInvalidPayload, contract.ReasonMissingEventType,
		contract.ReasonInvalidEventType, contract.ReasonMissingDeliveryID, contract.ReasonInvalidDeliveryID,
		reasonMissingTeam, DropUnsupportedType,
	}
}
