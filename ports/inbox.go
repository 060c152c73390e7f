package ports

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Claimed is a leased delivery with what the handler needs.
type Claimed struct {
	Delivery inbox.Delivery
	Payload  json.RawMessage
	Headers  map[string]string
	// TraceParent is the W3C traceparent stored with the row by the request that admitted it
	// ("" when that request was not traced).
	TraceParent string
}

// Ack names one lease: a write under it changes nothing once a newer epoch exists.
type Ack struct {
	ID    int64
	Epoch inbox.Epoch
}

// Result is the outcome write of one attempt: inbox.Completed() or a decision of the domain's
// RetryPolicy (retried or dead). Dropped decisions are never written.
type Result struct {
	Ack      Ack
	Decision inbox.Decision
}

// InboxStats is what the inbox gauges show.
type InboxStats struct {
	Counts map[inbox.State]int64
	// OldestQueuedAge is how long the oldest QUEUED row has been due and unclaimed (0 when none
	// is due). Measured from due_at, so retry backoff and replays of old rows do not inflate it.
	OldestQueuedAge time.Duration
	// DoneEstimated says the DONE count is an estimate: DONE rows are what the replay window
	// retains, and they are counted exactly only up to a bound, so the gauges cost the same
	// with millions of them.
	DoneEstimated bool
}

// RecordStatus is what an outcome write did to its row.
type RecordStatus int

const (
	RecordApplied   RecordStatus = iota + 1 // written under the named epoch
	RecordLeaseLost                         // the row is held by a newer lease or is no longer LEASED
	RecordGone                              // the row no longer exists
)

// Reaped is one expired lease the reaper ended.
type Reaped struct {
	Delivery inbox.Delivery // after the transition
	Decision inbox.Decision
}

// InboxStore is the persistence boundary of the inbox, shared by every server. It is the one
// wide port (the claimers, reaper, retention and replay all speak to the same rows).
// Errors: context errors, or an error wrapping *inbox.TransientError when the database is
// unreachable; lease-guarded writes report per row whether they applied instead of failing.
type InboxStore interface {
	// Claim leases up to limit due QUEUED rows, each the oldest row of a distinct scope that has
	// no LEASED row and no older QUEUED row, of an ACTIVE workspace or of the installation. Each
	// claim increments attempt and lease_epoch and sets the lease from the database clock.
	// owner names this server (for logs and release). A losing race is not an error: it
	// returns fewer rows.
	Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]Claimed, error)

	// Record writes outcomes; status[i] says whether results[i] applied, or why not: a newer
	// lease or another state holds the row (RecordLeaseLost), or the row is gone (RecordGone:
	// erased, or deleted by the handler itself). A row that did not apply is unchanged.
	Record(ctx context.Context, results []Result) (status []RecordStatus, err error)

	// Renew extends the leases still held under their epochs; it skips rows another
	// transaction holds (SKIP LOCKED) so it never waits on a fenced write. renewed[i] is false
	// for a lease lost or a row skipped this time.
	Renew(ctx context.Context, acks []Ack, lease time.Duration) (renewed []bool, err error)

	// Release hands leases back without counting the attempt (a stopping server).
	Release(ctx context.Context, acks []Ack) (released int, err error)

	// ReleaseUnheld hands back, without counting the attempt or the budget, every lease owner
	// holds in the database except the rows in held: the rows of a claim that committed while
	// its answer was lost with the connection (a failover), which owner does not know it holds.
	// Rows another transaction locks are skipped.
	ReleaseUnheld(ctx context.Context, owner string, held []int64) (released int, err error)

	// Reap ends up to limit expired leases, skipping locked rows: each row's transition is the
	// domain's Delivery.Expire under policy.
	Reap(ctx context.Context, policy inbox.RetryPolicy, limit int) ([]Reaped, error)

	// ReapAfterOutage is Reap for a reaper whose server could not reach the database during
	// outage: a row whose lease was running during the outage (inbox.Outage.Covers) is taken back
	// with Delivery.ExpireDuringOutage (no budget spent), every other row with Delivery.Expire.
	ReapAfterOutage(ctx context.Context, policy inbox.RetryPolicy, limit int, outage inbox.Outage) ([]Reaped, error)

	// DeleteEnded deletes up to limit DONE rows ended before doneBefore and DEAD rows ended
	// before deadBefore (their steps cascade), returning how many went.
	DeleteEnded(ctx context.Context, doneBefore, deadBefore time.Time, limit int) (int64, error)

	// Stats counts rows per state (every state present; DONE may be an estimate, see
	// InboxStats.DoneEstimated) and measures how long the oldest due QUEUED row has been waiting
	// past its due time, for the inbox gauges. Its cost must not grow with retained DONE rows.
	Stats(ctx context.Context) (InboxStats, error)

	// AcquireSingleton takes or keeps the named cluster-wide lease for holder until lease from
	// now; false when another live holder has it.
	AcquireSingleton(ctx context.Context, name, holder string, lease time.Duration) (bool, error)

	// ReleaseSingleton gives the named lease up when holder has it (a stopping server), so
	// another server takes it at its next attempt instead of after the lease ran out.
	ReleaseSingleton(ctx context.Context, name, holder string) error

	// Replay sets a DEAD row of the workspace (workspaceID 0: an installation row, NULL
	// workspace) back to QUEUED with attempt 0 under the domain's Delivery.Replay, recording
	// accountID and the time; an installation replay commits its audit record in the same
	// transaction. It returns the row after the transition.
	// Errors: ErrNotFound (no such row in that workspace); ErrConflict, as a *RejectedError
	// with reason "not-dead", wrapping *inbox.TransitionError (the row is not DEAD, e.g. a
	// concurrent replay won).
	Replay(ctx context.Context, workspaceID, id, accountID int64) (inbox.Delivery, error)
}

// Notifier wakes this server's claimers after rows were committed (in-process, no LISTEN).
type Notifier interface {
	Notify()
}
