package ports

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

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
