// Package beacon is the receiving side of Beacon, the example provider: a fictitious
// status-page service that posts a signed webhook when an incident of a status page is opened,
// updated or resolved. No such service is integrated; Beacon is the worked example of a
// provider built only from the kit (ports/contract, adapters/providerkit and its mirrorkit and
// readkit, adapters/webhookjson, adapters/sqlkit), and the server does not run it:
// adapters/providers does not list it, and its mirror table is created by its spec harness
// from beaconmirror's schema.sql rather than by a migration (ARCHITECTURE.md "Adding a
// provider"). specs/beacon runs the conformance suite for it and a whole server with it.
//
// Each Beacon connection is one status page with its own URL (/webhooks/beacon/{connectionId})
// and signing secret; every delivery goes to the connection's own workspace.
package beacon

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Provider is Beacon.
var Provider = provider.MustNew("BEACON")

// Kind is a Beacon connection, config {}, posting to its own URL signed with its own secret.
var Kind = connection.MustKind(connection.KindSpec{Name: "BEACON", Provider: Provider, WebhookURL: true, RequireSecret: true})

// Module is Beacon's static part: its connection kind, config validation and refusal reasons.
type Module struct{}

var (
	_ contract.ProviderModule    = Module{}
	_ contract.RejectionReasoner = Module{}
)

func (Module) Provider() provider.Provider { return Provider }

func (Module) Kinds() []connection.Kind { return []connection.Kind{Kind} }

// ResourceTypes is empty: a Beacon connection has no subscriptions, its page's deliveries all
// go to its own workspace.
func (Module) ResourceTypes() []string { return nil }

// ValidateConfig accepts any config object: a Beacon connection is identified by its URL and
// secret and has no source key. Errors: ErrMalformed for a kind of another provider.
func (Module) ValidateConfig(kind connection.Kind, _ map[string]any) (string, error) {
	if kind.Provider() != Provider || kind.String() != Kind.String() {
		return "", ports.Reject(ports.ErrMalformed, "unknown-kind", fmt.Sprintf("%s is not a Beacon connection kind", kind))
	}
	return "", nil
}

// RejectionReasons lists every reason the Beacon webhook refuses a delivery with
// (webhook_rejected_total{provider="beacon",reason}).
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonMissingConnection, contract.ReasonNotConfigured, contract.ReasonMissingSignature,
		contract.ReasonMalformedSignature, contract.ReasonMissingTimestamp, contract.ReasonMalformedTimestamp,
		contract.ReasonStaleTimestamp, contract.ReasonBadSignature, contract.ReasonInvalidPayload,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonMissingDeliveryID,
		contract.ReasonInvalidDeliveryID,
	}
}

// PersonFields declares where Beacon payloads name a person, for person erasure of the inbox:
// the author object of an incident ({"id","name","email"}: its id names the person) and its
// e-mail address.
func PersonFields() contract.PersonFields {
	return contract.PersonFields{Provider: Provider, UserShape: []string{"email"}, Emails: []string{"email"}}
}
