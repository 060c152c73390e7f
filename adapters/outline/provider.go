// Package outline is the receiving side of Outline webhooks. Each Outline connection has its own
// URL (/webhooks/outline/{connectionId}) and signing secret; a delivery is routed by the
// collection of its document or collection to the subscriptions of that connection, or to the
// connection itself when it names no collection.
package outline

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Provider is Outline.
var Provider = provider.MustNew("OUTLINE")

// Kind is an Outline connection, config {}, posting to its own URL signed with its own secret.
// It may also hold an Outline API key ("apiToken"), which its collections' backfill reads with.
var Kind = connection.MustKind(connection.KindSpec{Name: "OUTLINE", Provider: Provider, WebhookURL: true,
	RequireSecret: true, APIToken: true})

// ResourceCollection is the one subscription resource type: an Outline collection id.
const ResourceCollection = "collection"

// Module is Outline's contribution besides its webhook.
type Module struct{}

var _ contract.ProviderModule = Module{}

func (Module) Provider() provider.Provider { return Provider }

func (Module) Kinds() []connection.Kind { return []connection.Kind{Kind} }

func (Module) ResourceTypes() []string { return []string{ResourceCollection} }

// ValidateConfig accepts any config object: an Outline connection is identified by its URL and
// secret, and has no source key. Errors: ErrMalformed for a kind of another provider.
func (Module) ValidateConfig(kind connection.Kind, _ map[string]any) (string, error) {
	if kind.Provider() != Provider || kind.String() != Kind.String() {
		return "", ports.Reject(ports.ErrMalformed, "unknown-kind", fmt.Sprintf("%s is not an Outline connection kind", kind))
	}
	return "", nil
}
