package slack

import "github.com/hephaestus-dev/hephaestus/ports"

var _ ports.RejectionReasoner = Module{}

// reasonMissingTeam refuses an event_callback without team_id (nothing to route by).
const reasonMissingTeam = "missing-team"

// RejectionReasons lists every reason the Slack webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="slack",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		ports.ReasonNotConfigured, ports.ReasonMissingSignature, ports.ReasonMissingTimestamp,
		ports.ReasonMalformedTimestamp, ports.ReasonStaleTimestamp, ports.ReasonMalformedSignature,
		ports.ReasonBadSignature, ports.ReasonInvalidPayload, ports.ReasonMissingEventType,
		ports.ReasonInvalidEventType, ports.ReasonMissingDeliveryID, ports.ReasonInvalidDeliveryID,
		reasonMissingTeam, DropUnsupportedType,
	}
}
