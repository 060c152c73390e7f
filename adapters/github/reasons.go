package github

import "github.com/hephaestus-dev/hephaestus/ports/contract"

var _ contract.RejectionReasoner = Module{}

// reasonWrongApp refuses a delivery or an installation of another GitHub App.
const reasonWrongApp = "wrong-app"

// RejectionReasons lists every reason the GitHub webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="github",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonNotConfigured, contract.ReasonMissingSignature, contract.ReasonMalformedSignature,
		contract.ReasonBadSignature, reasonWrongApp,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonInvalidPayload,
		contract.ReasonMissingDeliveryID, contract.ReasonInvalidDeliveryID, reasonInvalidEventRoute,
		DropWithoutSource, DropNoRepositoryOrOrg,
	}
}
