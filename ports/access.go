package ports

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

// ReasonResourceNotAccessible is the reason (and the API's error code, 403) of a subscription
// that the provider says the connection's own credential cannot read.
const ReasonResourceNotAccessible = "resource-not-accessible"

// ResourceAccessChecker asks a provider whether a connection's own credential (a GitHub
// personal access token) can read a resource. A provider adapter offers one for each kind
// whose workspaces receive deliveries through another connection's source (GITHUB_PAT
// receives through the App installation), so that a subscription routes only what the
// provider vouches the workspace may read. It is called before a subscription commits and
// by the periodic recheck, never inside a database transaction or in admission.
type ResourceAccessChecker interface {
	// Kind is the connection kind whose subscriptions it checks.
	Kind() connection.Kind
	// ResourceTypes are the resource types it can check; a subscription of such a connection
	// to any other type is refused (400 unsupported-resource).
	ResourceTypes() []string
	// CheckAccess reports whether credential can read r. Errors: a *RejectedError of kind
	// ErrForbidden with reason ReasonResourceNotAccessible when the provider refused (its
	// Detail is a short kebab-case cause, e.g. "repository-not-found", safe to store and show:
	// never the credential or a response body); any other error means the provider gave no
	// usable answer (transport failure, 5xx, rate limit) and the check is retried later.
	CheckAccess(ctx context.Context, credential []byte, r Resource) error
}

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
	CheckedAt    *time.Time
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
	// a credential and were not checked since before (or never), at most limit.
	DueAccessChecks(ctx context.Context, kinds []string, before time.Time, after AccessCursor, limit int) ([]AccessCheck, error)
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
}

// ResourceValidator is implemented by a ProviderModule whose subscription resource ids have a
// fixed shape (GitHub and GitLab ids are positive integers), so a subscription that could
// never match a delivery is refused (400 invalid-resource) instead of stored.
type ResourceValidator interface {
	// ValidateResource errors: ErrMalformed.
	ValidateResource(r Resource) error
}
