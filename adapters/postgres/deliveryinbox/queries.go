package deliveryinbox

// Every statement runs in a READ COMMITTED transaction: each one reads the newest committed
// row, so the commit-time recheck sees an epoch that another claimer bumped after the step
// began (REPEATABLE READ would turn that into a serialization failure, i.e. contention instead
// of lease-lost). Every lock is taken with SKIP LOCKED: a fenced write never waits on erasure,
// a renewal, a reaper or a workspace operation; it observes "busy" and rolls back instead.

// takeCopyAdmission takes the erasure copy fence and reads the event's workspace in one round
// trip. FOR KEY SHARE OF f SKIP LOCKED: erasure's in_progress UPDATE (a non-key column) does
// not conflict, so the flag is what tells a step that erasure started; erasure's FOR UPDATE
// does conflict, so no row means erasure holds the fence. The lock is kept until commit, so
// erasure's FOR UPDATE waits for this step to end and the step never waits for erasure. The
// workspace id is a plain read of a column that never changes after admission; a NULL means an
// installation row or an event that is gone (the event fence tells which).
const takeCopyAdmission = `
SELECT f.in_progress, e.workspace_id
FROM inbox_erasure_fence f
LEFT JOIN provider_event e ON e.id = $1
WHERE f.name = 'inbox'
FOR KEY SHARE OF f SKIP LOCKED`

// copyFenceSeeded tells a fence row held by erasure from one that is missing (without a lock).
const copyFenceSeeded = `SELECT EXISTS (SELECT 1 FROM inbox_erasure_fence WHERE name = 'inbox')`

// lockWorkspaceKeyShare fences the event's workspace until commit. KEY SHARE conflicts only
// with FOR UPDATE and DELETE: a workspace deletion (whose cascade would remove the event under
// the step) waits for the step, and a workspace operation holding FOR UPDATE makes the step
// skip the row and report busy instead of waiting for it.
const lockWorkspaceKeyShare = `SELECT 1 FROM workspace WHERE id = $1 FOR KEY SHARE SKIP LOCKED`

// lockEventKeyShare fences the event row until commit and reads the lease it is under.
// KEY SHARE is the weakest row lock: a renewal's FOR NO KEY UPDATE SKIP LOCKED and its UPDATE
// of leased_until (a non-key column) go on during the step, while the reaper's and erasure's
// FOR UPDATE (or DELETE) conflict, so the reaper skips the row and erasure waits for the step.
const lockEventKeyShare = `
SELECT state, lease_epoch FROM provider_event WHERE id = $1 FOR KEY SHARE SKIP LOCKED`

// recheckEventShare is the commit-time recheck. FOR SHARE conflicts with every writer of the
// row (renewal, outcome, reaper, claim, erasure), so once it is granted nobody can change state
// or epoch before COMMIT: the check and the commit see the same lease. SKIP LOCKED: a renewal
// committing at this moment makes the step busy (retried in order) instead of waiting.
const recheckEventShare = `
SELECT state, lease_epoch FROM provider_event WHERE id = $1 FOR SHARE SKIP LOCKED`

// eventAndWorkspaceExist reads without a lock whether rows skipped above still exist: a skipped
// row that exists is busy, a missing one is gone (erased, or deleted with its workspace).
// A row whose DELETE has not committed yet still exists here: busy, retried, and the retry sees
// the outcome. $2 may be NULL (installation rows have no workspace).
const eventAndWorkspaceExist = `
SELECT EXISTS (SELECT 1 FROM provider_event WHERE id = $1),
       EXISTS (SELECT 1 FROM workspace WHERE id = $2)`

// claimStep records the named step inside the business transaction. ON CONFLICT DO NOTHING: a
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
