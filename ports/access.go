package ports

import (
	"context"
	"errors"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
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
	CheckAccess(ctx context.Context, target AccessTarget, r Resource) (ResourceInfo, error)
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

// AccessCheck is one subscription due for an access recheck, with its connection's sealed
// credential (opened only by the recheck, never logged).
type AccessCheck struct {
	WorkspaceID  int64
	ConnectionID int64
	Kind         string
	Resource     Resource
	Access       connection.Access
	// CheckedAt is the subscription's last check as read (nil: never). RecordAccess writes a
	// result only where it is unchanged, so a subscription set again meanwhile keeps its newer
	// verdict.
	CheckedAt *time.Time
	// SealedSecret is the connection's sealed credential (its secret, or its API token for a
	// kind that accepts one); nil for a kind whose checker finds its own (OwnCredential).
	SealedSecret []byte
}

// AccessCursor is the position of a recheck pass: after this connection and resource.
type AccessCursor struct {
	ConnectionID int64
	ResourceType string
	ResourceID   string
}

// AccessVerdict is the outcome of one check, to record.
type AccessVerdict struct {
	Check     AccessCheck
	Access    connection.Access
	Reason    string // "" for Verified
	CheckedAt time.Time
}

// AccessRecheckStore keeps the access state of subscriptions for the periodic recheck.
type AccessRecheckStore interface {
	// DueAccessChecks pages, in (connection, resource type, resource id) order after cursor,
	// the not REVOKED subscriptions of live (not UNINSTALLED) connections of kinds that have
	// a stored credential (or are among ownCredential, whose checkers find their own) and were
	// not checked since before (or never), at most limit.
	DueAccessChecks(ctx context.Context, kinds, ownCredential []string, before time.Time, after AccessCursor, limit int) ([]AccessCheck, error)
	// RecordAccess writes the verdicts of one connection's subscriptions under its lifecycle
	// lock (FOR UPDATE, as a subscription change takes it) and bumps its config_version when
	// an access changed, so an admission that waited on the lock reads the new route; a
	// subscription removed or checked again since its check was read is left alone. It
	// returns how many subscriptions changed access. Errors: a database failure.
	RecordAccess(ctx context.Context, workspaceID, connectionID int64, verdicts []AccessVerdict) (changed int, err error)
}

// SingletonLease picks the one server that runs an instance-wide loop (singleton_lease).
type SingletonLease interface {
	// AcquireSingleton takes or renews the named lease for holder for lease; false when another
	// holder has it. Errors: a database failure.
	AcquireSingleton(ctx context.Context, name, holder string, lease time.Duration) (bool, error)
	// ReleaseSingleton gives the named lease up when holder holds it (a stopping server), so
	// the next holder need not wait for it to run out; nothing when another holder has it.
	// Errors: a database failure.
	ReleaseSingleton(ctx context.Context, name, holder string) error
}

// ResourceValidator is implemented by a ProviderModule whose subscription resource ids have a
// fixed shape (GitHub and GitLab ids are positive integers), so a subscription that could
// never match a delivery is refused (400 invalid-resource) instead of stored.
type ResourceValidator interface {
	// ValidateResource errors: ErrMalformed.
	ValidateResource(r Resource) error
}
