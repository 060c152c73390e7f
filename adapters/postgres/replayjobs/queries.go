package replayjobs

// All statements run at READ COMMITTED. The lease statements have the inbox's and the sync
// jobs' shape: a claim takes FOR UPDATE SKIP LOCKED, raises lease_epoch and runs the lease from
// "now"; a batch names owner and epoch in its first statement and does nothing when the job is
// no longer RUNNING under both. "Now" is a parameter, coalesce($n::timestamptz,
// clock_timestamp()): NULL in production (the database clock decides), the spec's clock when
// Config.Clock is set.

// matchDeadRows is the filter of a bulk replay, shared by the dry-run count and the start's
// insert so both see the same rows: the workspace's DEAD rows ($1) of provider $2, event type
// $3, error class $4 (” matches every row), ended in [$5, $6) and received in [$7, $8) (a
// NULL bound is no bound). It reads ix_provider_event_dead (workspace_id, ended_at DESC, id
// DESC) WHERE state = 'DEAD', a set dead retention bounds.
const matchDeadRows = `
FROM provider_event e
WHERE e.state = 'DEAD' AND e.workspace_id = $1
  AND ($2 = '' OR e.provider = $2) AND ($3 = '' OR e.event_type = $3) AND ($4 = '' OR e.error_class = $4)
  AND ($5::timestamptz IS NULL OR e.ended_at >= $5) AND ($6::timestamptz IS NULL OR e.ended_at < $6)
  AND ($7::timestamptz IS NULL OR e.received_at >= $7) AND ($8::timestamptz IS NULL OR e.received_at < $8)`

const countMatchingDeadRows = `SELECT count(*) ` + matchDeadRows

// lockReplayStarts serialises the starts of one workspace: a transaction-scoped advisory lock
// on (20260150, hashint8(workspace id)), held to the start's commit, so the running-job count
// and the insert of two concurrent starts cannot interleave (two starts under a limit of one
// cannot both pass). It is its own statement: under READ COMMITTED the next statement's
// snapshot is taken after the lock is granted and sees the job of the start that held it.
// Only starts take it (no claimer, admission or batch waits for it); two workspaces whose ids
// hash alike only share a wait. The workspace row is not locked: admission's foreign-key
// checks and workspace suspension would wait behind a start's insert.
const lockReplayStarts = `SELECT pg_advisory_xact_lock(20260150, hashint8($1::bigint))`

// countRunningReplayJobs counts the workspace's RUNNING jobs (ix_replay_job_workspace_running).
const countRunningReplayJobs = `SELECT count(*) FROM replay_job WHERE workspace_id = $1 AND state = 'RUNNING'`

// countMatchingDeadRowsUpTo counts the rows matchDeadRows finds, stopping at $9 (the rows
// limit + 1): refusing a filter past the limit reads at most that many and writes nothing.
const countMatchingDeadRowsUpTo = `SELECT count(*) FROM (SELECT 1 ` + matchDeadRows + ` LIMIT $9) m`

// insertReplayJob stores the job RUNNING with nothing matched yet; the same transaction then
// fixes its rows (insertReplayJobRows) and its count (setReplayJobMatched).
const insertReplayJob = `
INSERT INTO replay_job (workspace_id, state, filter, matched, requested_by, requested_by_admin_token, started_at)
VALUES ($1, 'RUNNING', $2, 0, NULLIF($3::bigint, 0), $3::bigint = 0, coalesce($4::timestamptz, clock_timestamp()))
RETURNING id`

// insertReplayJobRows fixes the rows job $9 replays: the ids matchDeadRows finds in one
// statement snapshot, at most $10 (the rows limit + 1: a filter that passed the bounded count
// but matches more now, rows having died meanwhile, is refused too). It reads the rows without
// locking them, so it delays no claimer.
const insertReplayJobRows = `INSERT INTO replay_job_row (job_id, event_id) SELECT $9::bigint, e.id ` + matchDeadRows + ` LIMIT $10`

// setReplayJobMatched stores the matched count; a job that matched nothing is DONE at once.
const setReplayJobMatched = `
UPDATE replay_job
SET matched = $2::bigint,
    state = CASE WHEN $2::bigint = 0 THEN 'DONE' ELSE 'RUNNING' END,
    finished_at = CASE WHEN $2::bigint = 0 THEN started_at END
WHERE id = $1`

// jobColumns is what a ports.ReplayJob is read from.
const jobColumns = `j.id, j.workspace_id, j.state, j.filter, j.matched, j.replayed, j.skipped,
	coalesce(j.requested_by, 0), j.started_at, j.finished_at`

const (
	replayJobOfWorkspace = `SELECT ` + jobColumns + ` FROM replay_job j WHERE j.id = $1 AND j.workspace_id = $2`

	// listReplayJobsOfWorkspace pages along ix_replay_job_workspace, newest first.
	listReplayJobsOfWorkspace = `
SELECT ` + jobColumns + ` FROM replay_job j WHERE j.workspace_id = $1
ORDER BY j.id DESC
LIMIT $2 OFFSET $3`
	countReplayJobsOfWorkspace = `SELECT count(*) FROM replay_job WHERE workspace_id = $1`
)

// cancelReplayJob ends a RUNNING job of the workspace. Its row lock waits for a batch in
// flight (which holds the job's row FOR UPDATE to its commit), and under READ COMMITTED the
// update then rechecks the committed row: a batch that ended the job DONE leaves nothing to
// cancel, otherwise the next batch's fence finds the job CANCELLED and writes nothing.
const cancelReplayJob = `
UPDATE replay_job
SET state = 'CANCELLED', finished_at = coalesce($3::timestamptz, clock_timestamp()), leased_by = NULL, leased_until = NULL
WHERE id = $1 AND workspace_id = $2 AND state = 'RUNNING'
RETURNING id`

// deleteReplayJobRows forgets the rows of an ended job.
const deleteReplayJobRows = `DELETE FROM replay_job_row WHERE job_id = $1`

// claimReplayJob leases a RUNNING job no live lease holds (NULL: new or handed back; or run
// out: its server died) to owner $1 for $2 microseconds.
//
// Fair across workspaces: the job comes from the workspace with the fewest jobs held now
// (leases not run out), among those from the one whose turn came longest ago
// (replay_workspace_turn, never first), and within it the oldest job. Runners hand a job back
// between batches when another workspace's job waits (yieldReplayJob), so a one-row replay of
// one workspace waits for one batch of another's, not for all of its jobs. The held count and
// the candidates read the few RUNNING rows (the start's limit bounds them per workspace). The
// same statement records the workspace's turn (clock_timestamp(): an order, not a lease).
//
// FOR UPDATE OF c SKIP LOCKED: two runners claiming at once take different jobs, and a job
// whose batch is committing (the batch holds its row lock) is passed over; under READ
// COMMITTED the locking scan rechecks state and expiry on the committed row, so a job another
// runner claimed meanwhile is not leased twice. The held count and the turns are a snapshot:
// two runners claiming at the same moment may both prefer one workspace, and the next claims
// even it out.
const claimReplayJob = `
WITH held AS (
	SELECT workspace_id, count(*) AS jobs
	FROM replay_job
	WHERE state = 'RUNNING' AND leased_until > coalesce($3::timestamptz, clock_timestamp())
	GROUP BY workspace_id
), candidate AS (
	SELECT c.id
	FROM replay_job c
	LEFT JOIN held h ON h.workspace_id = c.workspace_id
	LEFT JOIN replay_workspace_turn t ON t.workspace_id = c.workspace_id
	WHERE c.state = 'RUNNING' AND (c.leased_until IS NULL OR c.leased_until <= coalesce($3::timestamptz, clock_timestamp()))
	ORDER BY coalesce(h.jobs, 0), t.claimed_at NULLS FIRST, c.id
	LIMIT 1
	FOR UPDATE OF c SKIP LOCKED
), claimed AS (
	UPDATE replay_job j
	SET lease_epoch = j.lease_epoch + 1, leased_by = $1,
	    leased_until = coalesce($3::timestamptz, clock_timestamp()) + $2::bigint * interval '1 microsecond'
	FROM candidate
	WHERE j.id = candidate.id
	RETURNING j.id, j.workspace_id, j.lease_epoch
), turn AS (
	INSERT INTO replay_workspace_turn (workspace_id, claimed_at)
	SELECT workspace_id, clock_timestamp() FROM claimed
	ON CONFLICT (workspace_id) DO UPDATE SET claimed_at = EXCLUDED.claimed_at
)
SELECT id, lease_epoch FROM claimed`

// yieldReplayJob hands the held job back between two of its batches when a RUNNING job of
// another workspace waits for a runner (no lease, or one run out): due for any runner at once,
// and the runner claims again, which picks the waiting workspace (claimReplayJob). No row:
// keep working (nothing waits, or the lease is gone: the next batch's fence says so). The
// waiting job is looked for among the few RUNNING rows (ix_replay_job_running). No lock
// beyond the job's own row for this one statement.
const yieldReplayJob = `
UPDATE replay_job j
SET leased_by = NULL, leased_until = NULL
WHERE j.id = $1 AND j.state = 'RUNNING' AND j.leased_by = $2 AND j.lease_epoch = $3
  AND EXISTS (
	SELECT 1 FROM replay_job o
	WHERE o.state = 'RUNNING' AND o.workspace_id <> j.workspace_id
	  AND (o.leased_until IS NULL OR o.leased_until <= coalesce($4::timestamptz, clock_timestamp())))
RETURNING j.id`

// lockHeldReplayJob is a batch's fence, its first statement: the job's row lock (FOR UPDATE)
// held to the batch's commit, taken only while the job is RUNNING under this owner and epoch.
// No row: the job was cancelled, taken over or ended, and the batch writes nothing. While the
// lock is held no claim takes the job over and no cancel ends it.
const lockHeldReplayJob = `
SELECT workspace_id, cursor, matched, replayed, skipped, coalesce(requested_by, 0)
FROM replay_job
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3
FOR UPDATE`

// nextReplayJobRows is the keyset step: the job's next rows after the cursor, in event id order
// (the primary key), one more than the batch to learn whether rows remain.
const nextReplayJobRows = `
SELECT event_id FROM replay_job_row
WHERE job_id = $1 AND event_id > $2
ORDER BY event_id
LIMIT $3`

// commitReplayBatch stores the batch's counts and keyset position in the batch's transaction
// and extends the lease, or ends the job DONE after its last row.
const commitReplayBatch = `
UPDATE replay_job
SET cursor = $2, replayed = $3, skipped = $4,
    state = CASE WHEN $5 THEN 'DONE' ELSE 'RUNNING' END,
    finished_at = CASE WHEN $5 THEN coalesce($7::timestamptz, clock_timestamp()) END,
    leased_by = CASE WHEN $5 THEN NULL ELSE leased_by END,
    leased_until = CASE WHEN $5 THEN NULL
                        ELSE GREATEST(leased_until, coalesce($7::timestamptz, clock_timestamp()) + $6::bigint * interval '1 microsecond') END
WHERE id = $1`

// failReplayJob ends the held job FAILED.
const failReplayJob = `
UPDATE replay_job
SET state = 'FAILED', finished_at = coalesce($4::timestamptz, clock_timestamp()), leased_by = NULL, leased_until = NULL
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3
RETURNING id`

// releaseReplayJob hands a held job back: due for any runner at once.
const releaseReplayJob = `
UPDATE replay_job SET leased_by = NULL, leased_until = NULL
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3`
