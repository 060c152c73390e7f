// Package github is the receiving side of GitHub App webhooks: it verifies the App's
// X-Hub-Signature-256, reads the signed body into an envelope (installation control events for
// the system scope, work events routed by repository and organization), and declares the GitHub
// connection kinds and their configuration.
//
// Routing never trusts a header: the installation id comes only from the signed body, and an
// event-type header that claims a control event must be backed by a control-shaped body.
package github

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Provider is GitHub.
var Provider = provider.MustNew("GITHUB")

var (
	// KindApp is a GitHub App installation: the source of every GitHub delivery. It has no URL
	// of its own (the App posts to /webhooks/github) and no per-connection secret (the App's
	// webhook secret is configuration). Config {"installationId": n}; its source key is n.
	KindApp = connection.MustKind(connection.KindSpec{Name: "GITHUB_APP", Provider: Provider,
		AlreadyConnected: "installation-already-connected"})
	// KindPAT is a personal-access-token connection. It has no webhook and no source key: its
	// workspace receives through the App installation that covers its repositories, for the
	// repositories its token can read. Config {"login": "..."}; its secret is the token, which
	// every subscription is checked with (api.RepositoryAccess), so it is required.
	KindPAT = connection.MustKind(connection.KindSpec{Name: "GITHUB_PAT", Provider: Provider, RequireSecret: true})
)

// Resource types a GitHub subscription names, with GitHub's numeric ids as decimal strings.
const (
	ResourceOrganization = "organization"
	ResourceRepository   = "repository"
)

// A GitHub login: alphanumerics and single hyphens, at most 39 characters.
var loginPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

// Module is GitHub's contribution besides its webhook.
type Module struct{}

var (
	_ contract.ProviderModule    = Module{}
	_ contract.ResourceValidator = Module{}
)

func (Module) Provider() provider.Provider { return Provider }

func (Module) Kinds() []connection.Kind { return []connection.Kind{KindApp, KindPAT} }

func (Module) ResourceTypes() []string { return []string{ResourceOrganization, ResourceRepository} }

// ValidateConfig checks a connection's config. An App's source key is its installation id, the
// id that the signed body of every delivery of that installation names. Errors: ErrMalformed.
func (Module) ValidateConfig(kind connection.Kind, config map[string]any) (string, error) {
	if kind.Provider() != Provider {
		return "", ports.Reject(ports.ErrMalformed, "unknown-kind", fmt.Sprintf("%s is not a GitHub connection kind", kind))
	}
	switch kind.String() {
	case KindApp.String():
		id, ok := idOf(config["installationId"])
		if !ok {
			return "", ports.Reject(ports.ErrMalformed, "invalid-config", "installationId must be a positive integer")
		}
		return id, nil
	case KindPAT.String():
		login, ok := config["login"].(string)
		if !ok || !loginPattern.MatchString(login) {
			return "", ports.Reject(ports.ErrMalformed, "invalid-config", "login must be a GitHub login")
		}
		return "", nil
	}
	return "", ports.Reject(ports.ErrMalformed, "unknown-kind", fmt.Sprintf("%s is not a GitHub connection kind", kind))
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

// RedeliveriesRequested counts the redeliveries of failed App deliveries the reconciler asked
// GitHub for (CONTRACT.md "Provider access").
const RedeliveriesRequested = "github_redeliveries_requested_total"

// Counters declares GitHub's own counters, exported at 0 from start.
func (Module) Counters() []contract.CounterSpec {
	return []contract.CounterSpec{{Name: RedeliveriesRequested,
		Help: "Redeliveries of failed GitHub App deliveries the reconciler asked GitHub for."}}
}
