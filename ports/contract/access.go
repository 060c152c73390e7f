package contract

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ReasonResourceNotAccessible is the reason (and the API's error code, 403) of a subscription
// that the provider says the connection's own credential cannot read.
const ReasonResourceNotAccessible = "resource-not-accessible"

// ResourceAccessChecker asks a provider whether a connection's own credential can read a
// resource, before a subscription of it is stored as readable and in the periodic recheck
// (CONTRACT.md "Provider access": every subscription is verified). A provider adapter offers
// one for each kind: a GitHub PAT or App installation token reads a repository or organization
// by id, a GitLab API token a project or group, a Slack bot token a channel, an Outline API key
// a collection. It is called before a subscription commits and by the periodic recheck, never
// inside a database transaction or in admission.
type ResourceAccessChecker interface {
	// Kind is the connection kind whose subscriptions it checks.
	Kind() connection.Kind
	// ResourceTypes are the resource types it can check; a subscription of such a connection
	// to any other type is refused (400 unsupported-resource).
	ResourceTypes() []string
	// CheckAccess reports whether the target connection's credential can read r, and what
	// the provider calls it (the display name stored with the subscription: a name the
	// caller wrote is never trusted). Errors: a *RejectedError of kind ErrForbidden with
	// reason ReasonResourceNotAccessible when the provider refused (its Detail is a short
	// kebab-case cause, e.g. "repository-not-found", safe to store and show: never the
	// credential or a response body), wrapped with ErrUnverifiable when the server has no way
	// to ask (no API root or App key configured); ErrMalformed for an id of the wrong shape;
	// any other error means the provider gave no usable answer (transport failure, 5xx, rate
	// limit) and the check is retried later.
	CheckAccess(ctx context.Context, target AccessTarget, r ports.Resource) (ResourceInfo, error)
}

// AccessTarget is the connection whose credential a check uses.
type AccessTarget struct {
	WorkspaceID  int64
	ConnectionID int64
	// Credential is the connection's stored credential, opened (its secret, or its provider
	// API token for a kind that accepts one), or the new one a credential change checks
	// before storing it. Nil for a checker that finds its connection's credential itself
	// (OwnCredential: a GitHub App's installation token, minted for the connection's own
	// installation).
	Credential []byte
}

// ResourceInfo is what the provider says of a checked resource.
type ResourceInfo struct {
	// Name is the provider's name of the resource ("owner/repo", an organization's login, a
	// project's path, a channel's name); "" when the provider gives none.
	Name string
}

// OwnCredential is implemented by a checker that finds its connection's credential itself
// (through the connection lookup that binds workspace and connection): it is handed no stored
// credential.
type OwnCredential interface {
	OwnCredential()
}

// ErrUnverifiable marks a refusal because the server has no way to ask the provider: no API
// root or App key configured for it, or a connection without the credential a check needs.
// Nothing is stored for a workspace ADMIN; the instance administrator may vouch for the
// subscription instead (management.ReasonVouched).
var ErrUnverifiable = errors.New("resource access cannot be verified on this server")

// ResourceValidator is implemented by a ProviderModule whose subscription resource ids have a
// fixed shape (GitHub and GitLab ids are positive integers), so a subscription that could
// never match a delivery is refused (400 invalid-resource) instead of stored.
type ResourceValidator interface {
	// ValidateResource errors: ErrMalformed.
	ValidateResource(r ports.Resource) error
}
