package ports

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
)

// SyncJob is a claimed backfill or teardown job (application/backfill runs it).
type SyncJob struct {
	ID           int64
	WorkspaceID  int64
	ConnectionID int64
	Provider     provider.Provider
	Kind         syncjob.Kind
	// ConnectionKind and SourceKey are the connection's (a GitHub App's installation id), so a
	// source can pick the credential of the read.
	ConnectionKind string
	SourceKey      string
	// ResourceType and ResourceID are the subscription's ("repository", "123"); ResourceName
	// its name when the subscription gave one ("octo/hello"). A teardown job's resource is the
	// connection ("connection", its id).
	ResourceType string
	ResourceID   string
	ResourceName string
	// Cursor is the position after the last committed page ("": the beginning).
	Cursor string
	// Attempt is how many counted failures the current page had.
	Attempt int
}

// SyncLease is the right to write a job's pages: a claim's owner and epoch. A write under a
// lease that was taken over (a newer epoch) or handed back does not commit.
type SyncLease struct {
	JobID int64
	Owner string
	Epoch int64
}

// SyncPage is one page a source read: what it writes and where the job stands after it.
type SyncPage struct {
	// Items is how many objects the page writes (sync_items_total, the job's items).
	Items int
	// Next is the cursor after this page; Done says there is no further page.
	Next string
	Done bool
	// Lock, when set, runs first in the page's transaction, before the job's fence: it takes
	// the provider's row locks that the provider's own writers take before they change the job
	// (Slack: the channel registry row, which a consent grant updates before its trigger
	// restarts the job), so a page commit and those writers lock in one order and cannot
	// deadlock. Nil: the page takes no lock before the fence.
	Lock func(ctx context.Context, tx Tx) error
	// Write writes the page through the provider's mirror store in tx, the store's transaction
	// that also commits the cursor and counters and checks the lease (nil: nothing to write).
	Write func(ctx context.Context, tx Tx) error
}

// SyncJobStore is the durable job queue (adapters/postgres/syncjobs). Errors are the store's
// translation of database errors (*inbox.TransientError); inbox.ErrLeaseLost where named.
type SyncJobStore interface {
	// ClaimSyncJob leases the oldest due job of one of providers (a QUEUED job due now, or a
	// RUNNING one whose lease ran out) for owner, for lease. found false: none.
	ClaimSyncJob(ctx context.Context, providers []string, owner string, lease time.Duration) (job SyncJob, l SyncLease, found bool, err error)
	// RenewSyncLease extends the lease. Errors: inbox.ErrLeaseLost.
	RenewSyncLease(ctx context.Context, l SyncLease, lease time.Duration) error
	// CommitSyncPage runs p.Write and stores p's cursor and counters (DONE when p.Done) in one
	// transaction that first checks, under the job's row lock, that l still holds the job.
	// Errors: inbox.ErrLeaseLost (nothing written), p.Write's error.
	CommitSyncPage(ctx context.Context, l SyncLease, p SyncPage, lease time.Duration) error
	// FailSyncPage records a failed page under l: QUEUED again at d.DueAt (attempt up by one
	// when d.Counts), or FAILED with d.Reason when d.Final. Errors: inbox.ErrLeaseLost.
	FailSyncPage(ctx context.Context, l SyncLease, d syncjob.Decision) error
	// YieldSyncJob hands the job back between two pages, keeping its cursor and its place in
	// its workspace's line, when a job of another workspace is due and waits; true: handed
	// back (claim again). Jobs are shared fairly between workspaces this way: a worker never
	// keeps one workspace's long backfill while another's first page waits.
	YieldSyncJob(ctx context.Context, l SyncLease) (yielded bool, err error)
	// ReleaseSyncLease hands the job back without counting (shutdown): QUEUED, due at once.
	ReleaseSyncLease(ctx context.Context, l SyncLease) error
}

// SyncResourceProgress is one job as the progress API shows it.
type SyncResourceProgress struct {
	Type       string
	ID         string
	State      syncjob.State
	Items      int64
	Pages      int64
	StartedAt  *time.Time
	FinishedAt *time.Time
	LastError  string
}

// SyncProgressStore starts and reads a connection's backfills for the sync API.
type SyncProgressStore interface {
	// RestartSync starts every backfill of the workspace's connection again from the
	// beginning (a missing job is created for each syncable subscription). Errors:
	// ErrNotFound (no such connection in the workspace), ErrConflict with reason
	// "connection-not-active".
	RestartSync(ctx context.Context, workspaceID, connectionID int64) error
	// SyncProgress lists the backfill jobs of the workspace's connection, by resource.
	// Errors: ErrNotFound.
	SyncProgress(ctx context.Context, workspaceID, connectionID int64) ([]SyncResourceProgress, error)
	// WorkspaceSyncs lists the workspace's connections that have backfill jobs, by connection
	// id, each with its provider and its jobs' states (the members' overview of the console).
	WorkspaceSyncs(ctx context.Context, workspaceID int64) ([]ConnectionSyncs, error)
}

// ConnectionSyncs is one connection's backfill jobs in a workspace's overview.
type ConnectionSyncs struct {
	ConnectionID int64
	Provider     string
	States       []syncjob.State
}

// SyncMetrics counts sync_items_total, sync_pages_total and sync_failures_total by provider.
type SyncMetrics interface {
	SyncPage(provider string, items int)
	SyncFailed(provider string)
}
