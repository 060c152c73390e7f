package github

import "github.com/hephaestus-dev/hephaestus/ports"

var _ ports.RejectionReasoner = Module{}

// reasonWrongApp refuses a delivery or an installation of another GitHub App.
const reasonWrongApp = "wrong-app"

// RejectionReasons lists every reason the GitHub webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="github",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		ports.ReasonNotConfigured, ports.ReasonMissingSignature, ports.ReasonMalformedSignature,
		ports.ReasonBadSignature, reasonWrongApp,
		ports.ReasonMissingEventType, ports.ReasonInvalidEventType, ports.ReasonInvalidPayload,
		ports.ReasonMissingDeliveryID, ports.ReasonInvalidDeliveryID, reasonInvalidEventRoute,
		DropWithoutSource, DropNoRepositoryOrOrg,
	}
}
