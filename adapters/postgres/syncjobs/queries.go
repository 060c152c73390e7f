package syncjobs

// All statements run at READ COMMITTED. The lease statements have the inbox's shape
// (adapters/postgres/inboxstore): a claim takes FOR UPDATE SKIP LOCKED, moves lease_epoch up
// by one and runs the lease from "now"; every later write names the epoch and the owner, and
// does nothing when the job is no longer RUNNING under both. "Now" is the last parameter of each
// lease statement, coalesce($n::timestamptz, clock_timestamp()): NULL in production (the
// database clock decides, as for the inbox), the spec's clock when Config.Clock is set.

// claimDueSyncJob leases the oldest due job of one of the providers $1: a QUEUED job due now,
// or a RUNNING one whose lease ran out (its server died or stalled: the claim takes it over
// and continues from the committed cursor). A backfill needs its connection ACTIVE and its
// subscription VERIFIED (a PAT subscription not yet checked waits), a teardown only runs;
// both need an ACTIVE workspace.
//
// Fair across workspaces: the job comes from the workspace with the fewest jobs running now
// (leases not run out), among those from the one whose turn came longest ago
// (sync_workspace_turn, never first: workers go round the workspaces instead of back to the one
// whose jobs are oldest), and within it the oldest due job. So a workspace that queued a
// thousand jobs gets no more workers than one that queued one, as soon as the other has a due
// job (workers also hand a job back between pages when another workspace waits:
// yieldSyncJob). The running count reads the few RUNNING rows through
// ix_sync_job_lease_expiry; the due jobs are sorted by it, a few thousand rows at most in
// practice. The same statement records the workspace's turn.
//
// FOR UPDATE OF j SKIP LOCKED: two servers claiming at once take different jobs, and a job
// whose page is committing (the commit holds its row lock) is passed over, so a lease that
// runs out during a commit is not taken over before the commit decided. The locking scan
// itself carries the state and due conditions, so under READ COMMITTED a job another server
// claimed and committed meanwhile fails them instead of being leased twice. The running count
// and the turns are a snapshot: two servers claiming at the same moment may both prefer one
// workspace, and the next claims even it out.
const claimDueSyncJob = `
WITH running AS (
	SELECT workspace_id, count(*) AS jobs
	FROM sync_job
	WHERE state = 'RUNNING' AND leased_until > coalesce($4::timestamptz, clock_timestamp())
	GROUP BY workspace_id
), candidate AS (
	SELECT j.id
	FROM sync_job j
	JOIN connection c ON c.id = j.connection_id AND c.workspace_id = j.workspace_id
	JOIN workspace w ON w.id = j.workspace_id
	LEFT JOIN running r ON r.workspace_id = j.workspace_id
	LEFT JOIN sync_workspace_turn t ON t.workspace_id = j.workspace_id
	WHERE j.provider = ANY ($1::text[])
	  AND ((j.state = 'QUEUED' AND j.due_at <= coalesce($4::timestamptz, clock_timestamp()))
	       OR (j.state = 'RUNNING' AND j.leased_until <= coalesce($4::timestamptz, clock_timestamp())))
	  AND w.state = 'ACTIVE'
	  AND (j.kind = 'TEARDOWN'
	       OR (c.state = 'ACTIVE' AND EXISTS (
	           SELECT 1 FROM connection_subscription s
	           WHERE s.connection_id = j.connection_id AND s.resource_type = j.resource_type
	             AND s.resource_id = j.resource_id AND s.access = 'VERIFIED')))
	ORDER BY coalesce(r.jobs, 0), t.claimed_at NULLS FIRST, j.due_at, j.id
	LIMIT 1
	FOR UPDATE OF j SKIP LOCKED
), claimed AS (
	UPDATE sync_job j
	SET state = 'RUNNING',
	    lease_epoch = j.lease_epoch + 1,
	    leased_until = coalesce($4::timestamptz, clock_timestamp()) + $3::bigint * interval '1 microsecond',
	    leased_by = $2,
	    started_at = COALESCE(j.started_at, coalesce($4::timestamptz, clock_timestamp()))
	FROM candidate
	WHERE j.id = candidate.id
	RETURNING j.id, j.workspace_id, j.connection_id, j.provider, j.kind, j.resource_type, j.resource_id,
		j.cursor, j.attempt, j.lease_epoch
), turn AS (
	INSERT INTO sync_workspace_turn (workspace_id, claimed_at)
	SELECT workspace_id, clock_timestamp() FROM claimed
	ON CONFLICT (workspace_id) DO UPDATE SET claimed_at = EXCLUDED.claimed_at
)
SELECT j.id, j.workspace_id, j.connection_id, j.provider, j.kind, j.resource_type, j.resource_id,
	COALESCE(j.cursor, ''), j.attempt, j.lease_epoch,
	(SELECT c.kind FROM connection c WHERE c.id = j.connection_id),
	COALESCE((SELECT c.source_key FROM connection c WHERE c.id = j.connection_id), ''),
	COALESCE((SELECT s.name FROM connection_subscription s WHERE s.connection_id = j.connection_id
	          AND s.resource_type = j.resource_type AND s.resource_id = j.resource_id), '')
FROM claimed j`

// renewSyncLease extends a lease still held, never shortening it. SKIP LOCKED is not used:
// the holder's own row lock is never held across calls.
const renewSyncLease = `
UPDATE sync_job
SET leased_until = GREATEST(leased_until, coalesce($5::timestamptz, clock_timestamp()) + $4::bigint * interval '1 microsecond')
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3
RETURNING id`

// lockHeldSyncJob is a page commit's fence, its first statement after the source's Lock
// (ports.SyncPage.Lock): the job's row lock (FOR UPDATE) held to the commit, taken only when
// the job is still RUNNING under this owner and epoch. No row: the lease was taken over, handed back, restarted or the job removed, and
// nothing of the page may commit. While the lock is held no claim can take the job over.
const lockHeldSyncJob = `
SELECT id FROM sync_job
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3
FOR UPDATE`

// takeCopyFence is the person-erasure copy fence a handler step takes (deliveryinbox): FOR KEY
// SHARE SKIP LOCKED does not conflict with erasure raising in_progress, so the flag tells a page
// that erasure started, and conflicts with erasure's FOR UPDATE, so no row means erasure holds
// the fence. Held to the commit, erasure's FOR UPDATE waits for the page, never the reverse.
const takeCopyFence = `
SELECT in_progress FROM inbox_erasure_fence WHERE name = 'inbox' FOR KEY SHARE SKIP LOCKED`

// commitSyncPage stores the page's cursor and counters, in the page's transaction, and
// extends the lease (or ends it when the page was the last).
const commitSyncPage = `
UPDATE sync_job
SET cursor = $2, items = items + $3, pages = pages + 1, attempt = 0, last_error = NULL,
    state = CASE WHEN $4 THEN 'DONE' ELSE 'RUNNING' END,
    leased_until = CASE WHEN $4 THEN NULL
                        ELSE GREATEST(leased_until, coalesce($6::timestamptz, clock_timestamp()) + $5::bigint * interval '1 microsecond') END,
    leased_by = CASE WHEN $4 THEN NULL ELSE leased_by END,
    finished_at = CASE WHEN $4 THEN coalesce($6::timestamptz, clock_timestamp()) END
WHERE id = $1`

// failSyncPage records a failed page under the lease: QUEUED again at $5 (the attempt counted
// when $6), or FAILED with the reason when $7.
const failSyncPage = `
UPDATE sync_job
SET state = CASE WHEN $7 THEN 'FAILED' ELSE 'QUEUED' END,
    attempt = attempt + CASE WHEN $6 THEN 1 ELSE 0 END,
    last_error = $4,
    due_at = COALESCE($5, due_at),
    leased_until = NULL, leased_by = NULL,
    finished_at = CASE WHEN $7 THEN coalesce($8::timestamptz, clock_timestamp()) END
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3
RETURNING id`

// yieldSyncJob hands a job back between two of its pages when a job of another workspace is
// due and waiting: QUEUED again with its cursor and its due_at (so it stays first in its own
// workspace's line), and the worker claims again, which picks the workspace with the fewest
// running jobs (claimDueSyncJob). No row: keep working (nothing waits, or the lease is gone:
// the next page's fence says so). The waiting job is looked for among the due QUEUED jobs
// (ix_sync_job_claimable) of any provider; one this server cannot claim only costs a claim
// that takes the same job again.
const yieldSyncJob = `
UPDATE sync_job j
SET state = 'QUEUED', leased_until = NULL, leased_by = NULL
WHERE j.id = $1 AND j.state = 'RUNNING' AND j.leased_by = $2 AND j.lease_epoch = $3
  AND EXISTS (
	SELECT 1 FROM sync_job o
	WHERE o.state = 'QUEUED' AND o.due_at <= coalesce($4::timestamptz, clock_timestamp())
	  AND o.workspace_id <> j.workspace_id)
RETURNING j.id`

// releaseSyncLease hands a lease back without counting: due at once.
const releaseSyncLease = `
UPDATE sync_job SET state = 'QUEUED', leased_until = NULL, leased_by = NULL, due_at = coalesce($4::timestamptz, clock_timestamp())
WHERE id = $1 AND state = 'RUNNING' AND leased_by = $2 AND lease_epoch = $3`

// lockConnectionForRestart reads the workspace's connection under a share of its lifecycle
// lock, so a restart commits before or after a transition, never across one.
const lockConnectionForRestart = `
SELECT state FROM connection WHERE id = $1 AND workspace_id = $2 FOR SHARE`

const restartSync = `SELECT sync_restart($1)`

const connectionExists = `SELECT EXISTS (SELECT 1 FROM connection WHERE id = $1 AND workspace_id = $2)`

// workspaceSyncs lists the workspace's connections with backfill jobs and their jobs' states.
const workspaceSyncs = `
SELECT connection_id, provider, array_agg(state ORDER BY resource_type, resource_id)
FROM sync_job
WHERE workspace_id = $1 AND kind = 'BACKFILL'
GROUP BY connection_id, provider
ORDER BY connection_id`

// syncProgress lists the workspace's connection's backfills by resource.
const syncProgress = `
SELECT resource_type, resource_id, state, items, pages, started_at, finished_at, COALESCE(last_error, '')
FROM sync_job
WHERE workspace_id = $1 AND connection_id = $2 AND kind = 'BACKFILL'
ORDER BY resource_type, resource_id`
