package ports

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
)

// ReplayJob is a bulk replay as operators see it.
type ReplayJob struct {
	ID          int64
	WorkspaceID int64
	State       replayjob.State
	Filter      replayjob.Filter
	Progress    replayjob.Progress
	// RequestedBy is the requesting account, InstanceAdminAccountID for the configured
	// instance administrator token; every row the job replays records it.
	RequestedBy int64
	StartedAt   time.Time
	FinishedAt  time.Time // zero while RUNNING
}

// ReplayLease is a runner's hold on one RUNNING job: every batch names its owner and epoch and
// changes nothing under a newer lease.
type ReplayLease struct {
	JobID int64
	Owner string
	Epoch int64
}

// ReplayJobStore keeps bulk replay jobs and runs their batches. Every operator method binds the
// workspace: a job of another workspace is never found.
type ReplayJobStore interface {
	// CountReplayable counts the workspace's DEAD rows that filter matches now (the dry run),
	// with the statement StartReplay uses to fix the job's rows.
	CountReplayable(ctx context.Context, workspaceID int64, filter replayjob.Filter) (int64, error)
	// StartReplay stores a RUNNING job for the rows that filter matches now, requested by
	// accountID (InstanceAdminAccountID: the instance administrator token); a job that matched
	// nothing is stored DONE at once. limits are checked atomically with the insert: of two
	// concurrent starts of one workspace, the second sees the first's job. Errors:
	// *replayjob.LimitError (nothing stored) when the workspace already runs
	// limits.MaxRunning() jobs or filter matches more than limits.MaxRows() rows.
	StartReplay(ctx context.Context, workspaceID int64, filter replayjob.Filter, accountID int64, limits replayjob.Limits) (ReplayJob, error)
	// ReplayJob reads one job. Errors: ErrNotFound.
	ReplayJob(ctx context.Context, workspaceID, id int64) (ReplayJob, error)
	// ListReplayJobs pages the workspace's jobs, newest first, and counts them.
	ListReplayJobs(ctx context.Context, workspaceID int64, page PageRequest) ([]ReplayJob, int, error)
	// CancelReplay ends a RUNNING job CANCELLED once the batch in flight (if any) committed, and
	// returns it. Errors: ErrNotFound; ErrConflict with reason "not-running" for an ended job.
	CancelReplay(ctx context.Context, workspaceID, id int64) (ReplayJob, error)

	// ClaimReplayJob leases a RUNNING job that no live lease holds (new, handed back, or its
	// server died) to owner for lease; false when there is none. Fair across workspaces: the
	// job comes from the workspace with the fewest jobs held now, among those from the one
	// whose turn came longest ago (never first), and within it the oldest job.
	ClaimReplayJob(ctx context.Context, owner string, lease time.Duration) (ReplayLease, bool, error)
	// ReplayBatch replays the next at most size rows of the held job in one transaction with
	// the single replay's rules, stores the counts and the keyset position, extends the lease,
	// and ends the job DONE after its last row. It reports how many rows it replayed and
	// whether rows remain. Errors: inbox.ErrLeaseLost when the job is no longer RUNNING under l
	// (cancelled, taken over by another server): nothing of the batch is written.
	ReplayBatch(ctx context.Context, l ReplayLease, size int, lease time.Duration) (replayed int, more bool, err error)
	// YieldReplayJob hands the held job back between two of its batches when a job of another
	// workspace waits for a runner, so the runner claims again and ClaimReplayJob's fair order
	// decides; false (and the job stays held) when nothing else waits. Errors: none for a lease
	// already lost (false: the next batch's fence says so).
	YieldReplayJob(ctx context.Context, l ReplayLease) (bool, error)
	// FailReplay ends the held job FAILED. Errors: inbox.ErrLeaseLost.
	FailReplay(ctx context.Context, l ReplayLease) error
	// ReleaseReplay hands the held job back (a stopping server) so another runner takes it at
	// once; a lease already lost is no error.
	ReleaseReplay(ctx context.Context, l ReplayLease) error
}
