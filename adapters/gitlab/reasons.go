package gitlab

import "github.com/hephaestus-dev/hephaestus/ports/contract"

var _ contract.RejectionReasoner = Module{}

// GitLab's own refusal reasons.
const (
	reasonWrongInstance = "wrong-instance" // X-Gitlab-Instance is not the connection's source server
	reasonMissingToken  = "missing-token"  // no X-Gitlab-Token
	reasonBadToken      = "bad-token"      // X-Gitlab-Token is not the connection's secret
)

// RejectionReasons lists every reason the GitLab webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="gitlab",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonMissingConnection, contract.ReasonNotConfigured, reasonWrongInstance,
		reasonMissingToken, reasonBadToken, contract.ReasonMalformedSignature, contract.ReasonMissingTimestamp,
		contract.ReasonMalformedTimestamp, contract.ReasonStaleTimestamp, contract.ReasonBadSignature,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonInvalidPayload,
		contract.ReasonInvalidDeliveryID, DropNoProjectOrGroup,
	}
}
