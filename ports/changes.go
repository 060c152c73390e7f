package ports

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
)

// ChangePublisher records a change in the workspace's change feed inside the transaction of
// the mirror write it describes, so the change commits with that write (and its named step)
// or not at all: a replay that skips a committed step publishes nothing again. Mirror stores
// (and a future sync job) call it only when their write changed the row (the version rules
// decide).
type ChangePublisher interface {
	// Publish inserts c into workspaceID's feed through tx. Errors: the adapter's error for a
	// transaction it cannot write through, *inbox.TransientError.
	Publish(ctx context.Context, tx Tx, workspaceID int64, c change.Change) error
}

// ChangeFeed reads a workspace's committed changes in feed order.
type ChangeFeed interface {
	// Changes returns up to limit changes of workspaceID after cursor, in cursor order, and
	// only changes no transaction still in flight can precede (so a consumer that continues
	// from the last one never skips a change that commits later). Errors:
	// change.ErrCursorExpired when retention deleted changes after cursor (never for the zero
	// cursor, which starts at the oldest change kept),
	// *inbox.TransientError.
	Changes(ctx context.Context, workspaceID int64, after change.Cursor, limit int) ([]change.Stored, error)
	// LatestChanges returns the newest limit changes of workspaceID that Changes could hand
	// out now (none that a transaction still in flight can precede), in cursor order: the
	// head of the feed, where a live view opens. Errors: *inbox.TransientError.
	LatestChanges(ctx context.Context, workspaceID int64, limit int) ([]change.Stored, error)
	// ChangesFor is Changes of r.WorkspaceID for r, with r's state read in the same snapshot
	// as the page: the page holds nothing that committed after a revocation the state does
	// not show (application/changes decides from the state what r may see). Errors: those of
	// Changes.
	ChangesFor(ctx context.Context, r FeedReader, after change.Cursor, limit int) ([]change.Stored, FeedReaderState, error)
	// LatestChangesFor is LatestChanges of r.WorkspaceID for r, with r's state read in the
	// same snapshot as the page. Errors: those of LatestChanges.
	LatestChangesFor(ctx context.Context, r FeedReader, limit int) ([]change.Stored, FeedReaderState, error)
}

// FeedReader is a caller of the change feed: the workspace it reads and who reads it.
type FeedReader struct {
	WorkspaceID int64
	Principal   Principal
}

// FeedReaderState is a FeedReader as the snapshot of a feed page shows it.
type FeedReaderState struct {
	// Authenticated: the principal's token is still stored (not revoked or rotated away), not
	// expired at the database's clock, of an enabled account whose instance administrator flag
	// is the principal's. Always true for the configured administrator token, which is no
	// account.
	Authenticated bool
	// WorkspaceExists: the workspace has not been deleted.
	WorkspaceExists bool
	// Role is the principal's role in the workspace; zero when it is no member.
	Role workspace.Role
}

// ChangeRetentionStore deletes changes past their retention and sizes the feed.
type ChangeRetentionStore interface {
	// DeleteChangesBefore deletes up to batch changes that occurred before cutoff, oldest
	// first, remembering per workspace the highest cursor it deleted; it returns how many it
	// deleted. Errors: *inbox.TransientError.
	DeleteChangesBefore(ctx context.Context, cutoff time.Time, batch int) (int, error)
	// CountChanges is the number of changes the feed keeps.
	CountChanges(ctx context.Context) (int64, error)
}

// ChangeMetrics observes the feed.
type ChangeMetrics interface {
	// ChangeFeedRows is the feed's size (integration_change_feed_rows).
	ChangeFeedRows(n int64)
	// ChangeFeedWaiting is the number of requests waiting for a change on this server
	// (integration_change_feed_waiting_clients).
	ChangeFeedWaiting(n int)
}

// ChangeSelection selects a workspace's changes about resources that are gone: changes whose
// type starts with TypePrefix and that All selects, or whose subject is one of Subjects or
// starts with one of SubjectPrefixes, or whose data has a member of DataMembers with one of its
// values (compared as text: "repositoryId" → ["1296269"]).
type ChangeSelection struct {
	TypePrefix      string
	All             bool
	Subjects        []string
	SubjectPrefixes []string
	DataMembers     map[string][]string
}

// ChangeRemover is the teardown's side of the change feed: the changes of resources an
// uninstalled connection's teardown deleted keep their id, cursor, type, subject and time
// (a consumer's cursor still finds every change after it) and lose their data.
type ChangeRemover interface {
	// RemoveChanges replaces, through tx, the data of the changes of workspaceID that sel
	// selects by the tombstone {"removed":true} and returns how many it replaced. Errors: the
	// adapter's error for a transaction it cannot write through, *inbox.TransientError.
	RemoveChanges(ctx context.Context, tx Tx, workspaceID int64, sel ChangeSelection) (int64, error)
}
