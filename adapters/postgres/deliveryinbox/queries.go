package deliveryinbox

// Every statement runs in a READ COMMITTED transaction: each one reads the newest committed
// row, so the commit-time recheck sees an epoch that another claimer bumped after the step
// began (REPEATABLE READ would turn that into a serialization failure, i.e. contention instead
// of lease-lost). Every lock is taken with SKIP LOCKED: a fenced write never waits on erasure,
// a renewal, a reaper or a workspace operation; it observes "busy" and rolls back instead.

// beginReadCommitted opens the fenced transaction (sent with openFenceSQL in one round trip).
const beginReadCommitted = `BEGIN ISOLATION LEVEL READ COMMITTED`

// openFenceSQL takes the copy fence, the workspace fence and the event fence and claims the
// step ($3, NULL for a Write), in this order and each with SKIP LOCKED, in one statement
// (migrations/00100_inbox_fence_functions.sql says what each lock lets go on and what it
// stops):
//   - copy admission: FOR KEY SHARE OF the fence row SKIP LOCKED. Erasure's in_progress UPDATE
//     (a non-key column) does not conflict, so the flag is what tells a step that erasure
//     started; erasure's FOR UPDATE does conflict, so a skipped row means erasure holds the
//     fence. Kept until commit: erasure's FOR UPDATE waits for this step, never the reverse.
//   - the event's workspace: FOR KEY SHARE SKIP LOCKED. A workspace deletion (whose cascade
//     would remove the event under the step) waits for the step; a workspace operation holding
//     FOR UPDATE makes the step skip the row and report busy instead of waiting.
//   - the event row: FOR KEY SHARE SKIP LOCKED, the weakest row lock: a renewal's FOR NO KEY
//     UPDATE SKIP LOCKED and its UPDATE of leased_until go on during the step, while the
//     reaper's and erasure's FOR UPDATE (or DELETE) conflict, so the reaper skips the row and
//     erasure waits for the step.
//   - the step row (claimStep's INSERT), only under fences Check passes.
//
// After the first fence it finds held it takes no further lock and reads without a lock
// whether the skipped rows still exist: a skipped row that exists is busy, a missing one gone.
const openFenceSQL = `
SELECT erasure_in_progress, workspace_busy, event_exists, event_busy, event_state, event_epoch,
       step_attempted, step_claimed
FROM inbox_fence_open($1, $2, $3)`

// recheckFenceSQL is the commit-time recheck, sent with COMMIT. FOR SHARE conflicts with every
// writer of the row (renewal, outcome, reaper, claim, erasure), so once it is granted nobody
// can change state or epoch before COMMIT: the check and the commit see the same lease. SKIP
// LOCKED: a renewal committing at this moment makes the step busy (retried in order) instead
// of waiting. It raises (aborting the transaction before COMMIT) unless the event is LEASED
// under $2, or gone while $3 says the transaction deleted it on purpose.
const recheckFenceSQL = `SELECT inbox_fence_recheck($1, $2, $3)`

// The SQLSTATEs of migrations/00100_inbox_fence_functions.sql.
const (
	fenceRowMissing   = "HXF01"
	recheckOtherLease = "HXF02"
	recheckBusy       = "HXF03"
	recheckGone       = "HXF04"
)

// claimStep records the named step inside the business transaction (inbox_fence_open runs the
// same INSERT; this is its fallback). ON CONFLICT DO NOTHING: a
// step committed by an earlier attempt returns no row and its writes are skipped. A concurrent
// claimer of the same step (a stale goroutine, an old lease holder) is waited for on the
// primary key: its commit makes this a conflict, its rollback lets this insert go on. The
// waited-for transaction never waits for us, so the wait cannot deadlock.
const claimStep = `
INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, $2)
ON CONFLICT DO NOTHING
RETURNING 1`

// stepCommitted answers Completed. It takes no lock: outcome checks hold no domain or copy lock.
const stepCommitted = `
SELECT EXISTS (SELECT 1 FROM provider_event_step WHERE event_id = $1 AND step_name = $2)`
