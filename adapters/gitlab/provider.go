// Package gitlab is the receiving side of GitLab group and project webhooks. Each GitLab
// connection has its own URL (/webhooks/gitlab/{connectionId}) and secret: a plain token sent
// back in X-Gitlab-Token, or a whsec_ signing key for Standard Webhooks signatures. Deliveries are
// routed by project and group to the subscriptions of that connection only.
package gitlab

import (
	"fmt"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Provider is GitLab.
var Provider = provider.MustNew("GITLAB")

// Kind is a GitLab connection: a hook on a group (config {"groupId": n}, optional) or on
// projects, posting to the connection's own URL with the connection's secret.
var Kind = connection.MustKind(connection.KindSpec{Name: "GITLAB", Provider: Provider, WebhookURL: true, RequireSecret: true,
	APIToken: true})

// Resource types a GitLab subscription names, with GitLab's numeric ids as decimal strings.
const (
	ResourceGroup   = "group"
	ResourceProject = "project"
)

const configGroupID = "groupId"

// Module is GitLab's contribution besides its webhook.
type Module struct{}

var (
	_ contract.ProviderModule    = Module{}
	_ contract.ResourceValidator = Module{}
)

func (Module) Provider() provider.Provider { return Provider }

func (Module) Kinds() []connection.Kind { return []connection.Kind{Kind} }

func (Module) ResourceTypes() []string { return []string{ResourceGroup, ResourceProject} }

// ValidateConfig checks {"groupId": n} (optional). A GitLab connection has no source key: its
// deliveries name the connection in the URL. Errors: ErrMalformed.
func (Module) ValidateConfig(kind connection.Kind, config map[string]any) (string, error) {
	if kind.Provider() != Provider || kind.String() != Kind.String() {
		return "", ports.Reject(ports.ErrMalformed, "unknown-kind", fmt.Sprintf("%s is not a GitLab connection kind", kind))
	}
	if v, ok := config[configGroupID]; ok && v != nil {
		if _, ok := webhookjson.PositiveID(v); !ok {
			return "", ports.Reject(ports.ErrMalformed, "invalid-config", "groupId must be a positive integer")
		}
	}
	return "", nil
}

// ValidateResource wants the provider's numeric id in canonical decimal, the form deliveries
// name it in: any other id could never match a delivery. Errors: ErrMalformed.
func (Module) ValidateResource(r ports.Resource) error {
	n, err := strconv.ParseInt(r.ID, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != r.ID {
		return ports.Reject(ports.ErrMalformed, "invalid-resource", r.Type+" id must be a positive integer")
	}
	return nil
}
