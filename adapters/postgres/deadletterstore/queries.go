package deadletterstore

// Every query binds the workspace: "workspace_id = $1" for a workspace, "workspace_id IS NULL"
// for the installation rows. The two forms are separate statements rather than one
// "IS NOT DISTINCT FROM" so each uses ix_provider_event_dead (workspace_id, ended_at DESC,
// id DESC) WHERE state = 'DEAD', and so no caller can reach installation rows by passing NULL.

// deadColumns is what a dead-letter list item is restored from.
const deadColumns = `e.id, e.workspace_id, e.provider, e.event_type, e.delivery_key, e.subject, e.scope_key,
	e.attempt, e.unknown_failures, e.lease_epoch, e.due_at, e.received_at, e.ended_at, e.error_class`

const (
	// listDeadOfWorkspace / listDeadOfInstallation: the filter (provider, event type, error
	// class; '' matches every row) narrows the workspace's DEAD rows, a set that dead
	// retention bounds, so it needs no index of its own. Newest first by end time, then id, so a
	// page boundary is stable between requests that add no DEAD row.
	listDeadOfWorkspace = `
SELECT ` + deadColumns + `
FROM provider_event e
WHERE e.state = 'DEAD' AND e.workspace_id = $1
  AND ($4 = '' OR e.provider = $4) AND ($5 = '' OR e.event_type = $5) AND ($6 = '' OR e.error_class = $6)
ORDER BY e.ended_at DESC, e.id DESC
LIMIT $2 OFFSET $3`
	listDeadOfInstallation = `
SELECT ` + deadColumns + `
FROM provider_event e
WHERE e.state = 'DEAD' AND e.workspace_id IS NULL
  AND ($3 = '' OR e.provider = $3) AND ($4 = '' OR e.event_type = $4) AND ($5 = '' OR e.error_class = $5)
ORDER BY e.ended_at DESC, e.id DESC
LIMIT $1 OFFSET $2`

	countDeadOfWorkspace = `SELECT count(*) FROM provider_event e WHERE e.state = 'DEAD' AND e.workspace_id = $1
  AND ($2 = '' OR e.provider = $2) AND ($3 = '' OR e.event_type = $3) AND ($4 = '' OR e.error_class = $4)`
	countDeadOfInstallation = `SELECT count(*) FROM provider_event e WHERE e.state = 'DEAD' AND e.workspace_id IS NULL
  AND ($1 = '' OR e.provider = $1) AND ($2 = '' OR e.event_type = $2) AND ($3 = '' OR e.error_class = $3)`

	// deadLetterOfWorkspace / deadLetterOfInstallation read one DEAD row with its payload and
	// headers; a row of another workspace, or one that is not DEAD, is no row.
	deadLetterOfWorkspace = `
SELECT ` + deadColumns + `, e.payload, e.headers
FROM provider_event e
WHERE e.id = $1 AND e.state = 'DEAD' AND e.workspace_id = $2`
	deadLetterOfInstallation = `
SELECT ` + deadColumns + `, e.payload, e.headers
FROM provider_event e
WHERE e.id = $1 AND e.state = 'DEAD' AND e.workspace_id IS NULL`
)

// The overview of one workspace: reads of one REPEATABLE READ snapshot, so the counts, the
// oldest age and the busiest scopes describe the same moment. Ages use the database clock,
// which also stamped received_at, so servers' clocks do not skew them.
//
// Their cost does not grow with retained rows (migration 00009): QUEUED rows come from
// ix_provider_event_queued_workspace (the workspace's queue), LEASED rows from
// uq_provider_event_leased_scope (at most the claimers of all servers), DEAD rows from
// ix_provider_event_dead, and DONE rows, which the replay window retains by the million, are
// counted only up to $2 + 1 along uq_provider_event_delivery, whose order the ORDER BY asks for
// (the snapshot runs with sequential scans and sorts off, see pinOverviewPlan, so no plan can
// count them through another index). Beyond that bound the DONE count is the planner's
// estimate (estimateDone…), and the answer says so.
const (
	pinOverviewPlan = `
SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
       set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true),
       set_config('jit', 'off', true)`

	countByStateOfWorkspace = `
SELECT (SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND state = 'QUEUED'),
       (SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND state = 'LEASED'),
       (SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND state = 'DEAD'),
       (SELECT count(*) FROM (
            SELECT 1 FROM provider_event WHERE workspace_id = $1 AND state = 'DONE'
            ORDER BY workspace_id, provider, delivery_key LIMIT $2::bigint + 1) d)`
	estimateDoneOfWorkspace    = `EXPLAIN (FORMAT JSON) SELECT 1 FROM provider_event WHERE workspace_id = %d AND state = 'DONE'`
	oldestQueuedAgeOfWorkspace = `
SELECT coalesce(extract(epoch FROM clock_timestamp() - min(received_at)), 0)::float8
FROM provider_event WHERE workspace_id = $1 AND state = 'QUEUED'`
	busiestScopesOfWorkspace = `
SELECT scope_key, count(*) AS queued
FROM provider_event WHERE workspace_id = $1 AND state = 'QUEUED'
GROUP BY scope_key
ORDER BY queued DESC, scope_key
LIMIT $2`

	countByStateOfInstallation = `
SELECT (SELECT count(*) FROM provider_event WHERE workspace_id IS NULL AND state = 'QUEUED'),
       (SELECT count(*) FROM provider_event WHERE workspace_id IS NULL AND state = 'LEASED'),
       (SELECT count(*) FROM provider_event WHERE workspace_id IS NULL AND state = 'DEAD'),
       (SELECT count(*) FROM (
            SELECT 1 FROM provider_event WHERE workspace_id IS NULL AND state = 'DONE'
            ORDER BY workspace_id, provider, delivery_key LIMIT $1::bigint + 1) d)`
	estimateDoneOfInstallation    = `EXPLAIN (FORMAT JSON) SELECT 1 FROM provider_event WHERE workspace_id IS NULL AND state = 'DONE'`
	oldestQueuedAgeOfInstallation = `
SELECT coalesce(extract(epoch FROM clock_timestamp() - min(received_at)), 0)::float8
FROM provider_event WHERE workspace_id IS NULL AND state = 'QUEUED'`
	busiestScopesOfInstallation = `
SELECT scope_key, count(*) AS queued
FROM provider_event WHERE workspace_id IS NULL AND state = 'QUEUED'
GROUP BY scope_key
ORDER BY queued DESC, scope_key
LIMIT $1`
)

// activityOfWorkspace counts the workspace's rows that ended in the last hour, per minute. The
// inner scan walks ix_provider_event_ended (state, ended_at) over the hour's DONE and DEAD rows
// of the instance and keeps the workspace's, at most $2 of them, so one busy hour costs a
// bounded read rather than a scan of it all; the caller learns the cap was reached.
const activityOfWorkspace = `
SELECT date_trunc('minute', r.ended_at) AS minute,
       count(*) FILTER (WHERE r.state = 'DONE') AS handled,
       count(*) FILTER (WHERE r.state = 'DEAD') AS failed
FROM (
    SELECT e.state, e.ended_at FROM provider_event e
    WHERE e.state IN ('DONE', 'DEAD') AND e.ended_at >= now() - interval '1 hour' AND e.workspace_id = $1
    LIMIT $2
) r
GROUP BY 1
ORDER BY 1`
