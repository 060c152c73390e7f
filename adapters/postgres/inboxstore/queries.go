package inboxstore

// All statements run at READ COMMITTED. Each one is a single statement (or one short
// transaction for reaping and replay), so a statement snapshot is what every scope check reads.
//
// Every statement that reads the clock takes "now" as a parameter, coalesce($n::timestamptz,
// clock_timestamp()): the store passes NULL unless its Config.Clock is set, so in production the
// database clock judges every lease, due time and end time, whichever server writes; a spec's
// clock moves them without waiting (ARCHITECTURE.md "Time in SQL").

// deliveryColumns is what a Delivery is restored from (payload and headers are read only where
// a handler needs them).
const deliveryColumns = `e.id, e.workspace_id, e.provider, e.event_type, e.delivery_key, e.subject,
	e.scope_key, e.state, e.attempt, e.unknown_failures, e.lease_epoch, e.leased_until, e.due_at,
	e.received_at, e.ended_at, e.error_class, e.replayed_by, e.replayed_at`

// pinClaimPlan runs before claimOldestDueInFreeScope in the same implicit transaction (one
// pipeline, one Sync): the settings are local to that transaction and end with it.
const pinClaimPlan = `
SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
       set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true),
       set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
       set_config('enable_material', 'off', true), set_config('jit', 'off', true)`

// claimOldestDueInFreeScope leases up to $1 rows, each the oldest QUEUED row of its scope, due,
// of an ACTIVE workspace or of the installation, in a scope with no LEASED row.
//
// It visits scopes, not rows (migration 00008): it walks provider_event_scope in head order
// (oldest head first) and, for each scope, f finds the oldest QUEUED row in the statement
// snapshot with one descent of ix_provider_event_queued_scope. A scope whose head is LEASED or
// waits for its retry costs those index steps, however many rows wait behind it. The walk is
// lazy (index scans under nested loops, no sort): a claim visits its $1 scopes plus the blocked
// scopes with older heads, and stops.
//
//   - The scope checks read the statement snapshot: f is the oldest QUEUED row of the scope in
//     it, and a row another claimer has locked but not committed yet is still QUEUED there, so
//     this claimer meets it as the head, cannot lock it, and skips the whole scope instead of
//     taking the row behind it.
//   - FOR UPDATE OF e SKIP LOCKED (only e: the workspace row is read, never locked, so a
//     workspace operation is not blocked by claims) passes over rows another claimer on any
//     server is taking. The locking scan itself carries state = 'QUEUED' and the due check:
//     under READ COMMITTED a row changed since the snapshot is rechecked against the locking
//     scan's own conditions only, so a head that another claimer leased and committed meanwhile
//     fails them instead of being leased twice.
//   - Every candidate is the oldest QUEUED row of a distinct scope, so one statement may lease
//     several of them.
//   - The few races the snapshot cannot see (a replay that makes an older row QUEUED while a
//     claim of a newer one commits) end at uq_provider_event_leased_scope: the statement fails
//     with a unique violation and the caller claims again.
//
// The plan must not depend on statistics (those of a scope table analyzed while it was small
// make a sequential scan look cheapest for every step of the walk). The statement is shaped so
// that only index scans under nested loops answer it lazily — f is ORDER BY … LIMIT 1 on a row
// comparison that only its index serves, e joins by primary key, the workspace and leased-scope
// checks are scalar subqueries (one index probe each), and e's state check is written IS NOT
// DISTINCT FROM (the same test on a NOT NULL column) so that it cannot qualify e for a full
// scan of a partial QUEUED index — and it runs after pinClaimPlan in the same implicit
// transaction, which takes sequential scans, sorts, hash and merge joins and JIT off the
// planner's menu. specs/inbox asserts the plan under misleading statistics.
//
// attempt and lease_epoch go up by one (the domain's Delivery.Claim); the lease runs from the
// database clock ($4 NULL), because servers' clocks differ and expiry is compared in SQL.
const claimOldestDueInFreeScope = `
WITH candidates AS (
	SELECT e.id
	FROM provider_event_scope h
	CROSS JOIN LATERAL (
		SELECT q.scope_key, q.id FROM provider_event q
		WHERE q.state = 'QUEUED' AND (q.scope_key, q.id) > (h.scope_key, 0)
		ORDER BY q.scope_key, q.id LIMIT 1) f
	JOIN provider_event e ON e.id = f.id
	WHERE f.scope_key = h.scope_key
	  AND e.state IS NOT DISTINCT FROM 'QUEUED'
	  AND e.due_at <= coalesce($4::timestamptz, clock_timestamp())
	  AND (e.workspace_id IS NULL
	       OR (SELECT w.state FROM workspace w WHERE w.id = e.workspace_id) = 'ACTIVE')
	  AND (SELECT count(*) FROM provider_event l WHERE l.scope_key = h.scope_key AND l.state = 'LEASED') = 0
	ORDER BY h.head_id, h.scope_key
	LIMIT $1
	FOR UPDATE OF e SKIP LOCKED
)
UPDATE provider_event e
SET state = 'LEASED',
    attempt = e.attempt + 1,
    lease_epoch = e.lease_epoch + 1,
    leased_until = coalesce($4::timestamptz, clock_timestamp()) + $2::bigint * interval '1 microsecond',
    leased_by = $3,
    leased_at = coalesce($4::timestamptz, clock_timestamp())
FROM candidates c
WHERE e.id = c.id
RETURNING ` + deliveryColumns + `, e.payload, e.headers, e.trace_parent`

// recordOutcomes writes a batch of outcomes in one statement, and the attempt each outcome ends
// in the same statement (provider_event_attempt, migration 00070): its number (the row's attempt
// during the lease, before a contention retry gives it back), the lease's start and server
// (leased_at and leased_by, which the outcome leaves in place), the end time, the outcome ($9)
// and the failure table's cause ($10, NULL for done). The WHERE clause is the SQL
// backstop of the domain's lease check: a row that is no longer LEASED under the named epoch
// (taken back by the reaper, released, erased) is left alone, its id is not returned and no
// attempt is written for it (the reaper or the release wrote that lease's attempt).
// The UPDATE takes the ordinary row lock: it waits for a step transaction's commit-time
// recheck (a shared lock) to finish rather than skipping, because an outcome must be written.
//
// Each outcome comes back with whether it applied and, when it did not, whether the row still
// exists (a newer lease holds it) or is gone (erased, or deleted by its own handler step). The
// existence check reads the statement snapshot, as of before the update: a row deleted by a
// transaction that committed after the snapshot still counts as present, and its outcome as
// lease-lost, which drops the work just the same.
const recordOutcomes = `
WITH u AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::int[], $7::int[], $9::text[], $10::text[])
		AS u(id, epoch, state, due_at, error_class, attempt_delta, budget_delta, outcome, cause)
), written AS (
	UPDATE provider_event e
	SET state = u.state,
	    attempt = e.attempt + u.attempt_delta,
	    unknown_failures = e.unknown_failures + u.budget_delta,
	    due_at = COALESCE(u.due_at, e.due_at),
	    ended_at = CASE WHEN u.state IN ('DONE', 'DEAD') THEN coalesce($8::timestamptz, clock_timestamp()) END,
	    error_class = u.error_class,
	    leased_until = NULL
	FROM u
	WHERE e.id = u.id AND e.state = 'LEASED' AND e.lease_epoch = u.epoch
	RETURNING e.id, e.lease_epoch, e.attempt - u.attempt_delta AS attempt, e.leased_at, e.leased_by, u.outcome, u.cause
), attempts AS (
	INSERT INTO provider_event_attempt (event_id, lease_epoch, attempt, started_at, ended_at, server, outcome, cause)
	SELECT w.id, w.lease_epoch, w.attempt, w.leased_at, coalesce($8::timestamptz, clock_timestamp()), w.leased_by, w.outcome, w.cause
	FROM written w
	ON CONFLICT (event_id, lease_epoch) DO NOTHING
)
SELECT u.id, w.id IS NOT NULL, EXISTS (SELECT 1 FROM provider_event p WHERE p.id = u.id)
FROM u LEFT JOIN written w ON w.id = u.id`

// renewHeldLeases extends the leases still held under their epochs, never shortening one.
// FOR NO KEY UPDATE SKIP LOCKED: a named step holds a key-share lock on its event until commit,
// which does not conflict with this lock, so renewal stays possible during a step; a lock that
// does conflict (an outcome or reaper transaction) is skipped, not waited on, and the next
// renewal tries again.
const renewHeldLeases = `
WITH held AS (
	SELECT e.id
	FROM provider_event e
	JOIN unnest($1::bigint[], $2::bigint[]) AS a(id, epoch) ON a.id = e.id
	WHERE e.state = 'LEASED' AND e.lease_epoch = a.epoch
	FOR NO KEY UPDATE OF e SKIP LOCKED
)
UPDATE provider_event e
SET leased_until = GREATEST(e.leased_until, coalesce($4::timestamptz, clock_timestamp()) + $3::bigint * interval '1 microsecond')
FROM held
WHERE e.id = held.id
RETURNING e.id`

// releaseHeldLeases hands leases back without counting the attempt (the domain's
// Delivery.Release): the row is due at once and keeps its id, so it still heads its scope.
// It takes the ordinary row lock and waits briefly for a committing step: the caller bounds the
// wait with its shutdown timeout.
//
// A release is recorded in the attempt history with outcome 'released' (the work of that lease
// was cut short by a stopping server; an operator asking what happened to a delivery should see
// it), under the attempt number it gives back: the next lease shows the same number again. The
// statement answers one row per released lease (the attempts it inserted).
const releaseHeldLeases = `
WITH released AS (
	UPDATE provider_event e
	SET state = 'QUEUED',
	    attempt = GREATEST(e.attempt - 1, 0),
	    due_at = coalesce($3::timestamptz, clock_timestamp()),
	    leased_until = NULL
	FROM unnest($1::bigint[], $2::bigint[]) AS a(id, epoch)
	WHERE e.id = a.id AND e.state = 'LEASED' AND e.lease_epoch = a.epoch
	RETURNING e.id, e.lease_epoch, e.attempt + 1 AS attempt, e.leased_at, e.leased_by
)
INSERT INTO provider_event_attempt (event_id, lease_epoch, attempt, started_at, ended_at, server, outcome)
SELECT r.id, r.lease_epoch, r.attempt, r.leased_at, coalesce($3::timestamptz, clock_timestamp()), r.leased_by, 'released'
FROM released r
ON CONFLICT (event_id, lease_epoch) DO NOTHING`

// releaseUnheldLeases is releaseHeldLeases for the leases of owner $1 that are not in $2, the
// rows this server holds: a claim whose commit reached the database while its answer was lost
// left them leased to a server that does not know it. The LEASED rows are few (the claimers
// bound them), and the partial index of LEASED scopes finds them.
const releaseUnheldLeases = `
UPDATE provider_event e
SET state = 'QUEUED',
    attempt = GREATEST(e.attempt - 1, 0),
    due_at = coalesce($3::timestamptz, clock_timestamp()),
    leased_until = NULL,
    leased_by = NULL
WHERE e.id IN (
    SELECT u.id FROM provider_event u
    WHERE u.state = 'LEASED' AND u.leased_by = $1 AND u.id <> ALL($2::bigint[])
    FOR UPDATE SKIP LOCKED)
  AND e.state = 'LEASED' AND e.leased_by = $1`

// selectExpiredLeases reads up to $1 expired leases with the time that judges them ($2, or the
// database clock: read after the comparison, so it is never earlier than the instant compared).
// FOR UPDATE SKIP LOCKED conflicts with a named step's key-share lock, so the reaper passes over
// a row whose step is committing (and over rows other servers' reapers are taking) instead of
// waiting; a skipped row is looked at again on the next pass.
const selectExpiredLeases = `
SELECT ` + deliveryColumns + `, coalesce($2::timestamptz, clock_timestamp())
FROM provider_event e
WHERE e.state = 'LEASED' AND e.leased_until <= coalesce($2::timestamptz, clock_timestamp())
ORDER BY e.leased_until
LIMIT $1
FOR UPDATE OF e SKIP LOCKED`

// writeExpiredLeases writes the domain's Expire decisions for the rows the same transaction
// locked, and each expired lease's attempt (outcome 'lease-expired', cause 'lease-expired',
// ended when the reaper judged it, $9; $10 the attempt number of the lease) in the same
// statement; the epoch condition is the backstop (it cannot fail while the lock is held).
const writeExpiredLeases = `
WITH expired AS (
	UPDATE provider_event e
	SET state = u.state,
	    attempt = u.attempt,
	    unknown_failures = u.unknown_failures,
	    due_at = u.due_at,
	    ended_at = u.ended_at,
	    error_class = u.error_class,
	    leased_until = NULL
	FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::timestamptz[], $8::text[], $9::timestamptz[], $10::int[])
		AS u(id, epoch, state, attempt, unknown_failures, due_at, ended_at, error_class, judged_at, lease_attempt)
	WHERE e.id = u.id AND e.state = 'LEASED' AND e.lease_epoch = u.epoch
	RETURNING e.id, e.lease_epoch, u.lease_attempt, e.leased_at, u.judged_at, e.leased_by
)
INSERT INTO provider_event_attempt (event_id, lease_epoch, attempt, started_at, ended_at, server, outcome, cause)
SELECT x.id, x.lease_epoch, x.lease_attempt, x.leased_at, x.judged_at, x.leased_by, 'lease-expired', 'lease-expired'
FROM expired x
ON CONFLICT (event_id, lease_epoch) DO NOTHING`

// deleteEndedRows deletes a batch of DONE rows older than the replay window and DEAD rows older
// than the dead retention; their steps cascade. FOR UPDATE SKIP LOCKED passes over a row a
// replay holds (the replay's newest version is rechecked, so a row that is QUEUED again is
// never deleted) and over rows another deleter took.
const deleteEndedRows = `
DELETE FROM provider_event
WHERE id IN (
	SELECT e.id FROM provider_event e
	WHERE (e.state = 'DONE' AND e.ended_at < $1)
	   OR (e.state = 'DEAD' AND e.ended_at < $2)
	LIMIT $3
	FOR UPDATE SKIP LOCKED)`

// sweepScopeHeads repairs provider_event_scope rows whose head is no longer a QUEUED or LEASED
// row of the scope: a removal that found the scope's latch busy (an admission of the scope in
// flight, a concurrent removal, a hash collision) left them as they were (migration 00008).
// provider_event_scope_remove recomputes each under the latch: it moves the head, or deletes
// the row of a scope that has nothing left. The cost follows the number of scopes, not rows.
const sweepScopeHeads = `
SELECT count(provider_event_scope_remove(s.scope_key)::text)
FROM provider_event_scope s
WHERE NOT EXISTS (
	SELECT 1 FROM provider_event p
	WHERE p.id = s.head_id AND p.scope_key = s.scope_key AND p.state IN ('QUEUED', 'LEASED'))`

// inboxStats feeds the inbox gauges at a cost that does not grow with retained rows
// (migration 00009): QUEUED, LEASED and DEAD are exact counts over their partial indexes (the
// backlog and the dead letters), the oldest due time is one step of ix_provider_event_queued_due,
// and DONE rows (what the replay window retains) are counted only up to $1 + 1 through
// ix_provider_event_ended. Beyond that the caller estimates DONE from the table's size: the
// last column is the planner's row estimate of provider_event (reltuples scaled to its current
// pages), 0 when the table was never analyzed. Ages use the database clock, which also judges
// leases.
const inboxStats = `
WITH queued AS (
	SELECT count(*) AS n, min(due_at) AS due FROM provider_event WHERE state = 'QUEUED'
)
SELECT queued.n,
       COALESCE(EXTRACT(EPOCH FROM greatest(coalesce($2::timestamptz, clock_timestamp()) - queued.due, interval '0')), 0)::float8,
       (SELECT count(*) FROM provider_event WHERE state = 'LEASED'),
       (SELECT count(*) FROM provider_event WHERE state = 'DEAD'),
       (SELECT count(*) FROM (SELECT 1 FROM provider_event WHERE state = 'DONE' LIMIT $1::bigint + 1) d),
       (SELECT CASE WHEN c.relpages > 0 AND c.reltuples >= 0
                    THEN (c.reltuples / c.relpages
                          * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint
                    ELSE 0 END
        FROM pg_class c WHERE c.oid = 'provider_event'::regclass)
FROM queued`

// acquireSingleton takes the named lease when it is free, expired or already ours. Concurrent
// takers serialise on the row's lock; under READ COMMITTED the later one rechecks the condition
// on the committed winner's version and gets no row.
const acquireSingleton = `
INSERT INTO singleton_lease AS s (name, holder, leased_until)
VALUES ($1, $2, coalesce($4::timestamptz, clock_timestamp()) + $3::bigint * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE
SET holder = EXCLUDED.holder, leased_until = EXCLUDED.leased_until
WHERE s.holder IS NULL OR s.holder = EXCLUDED.holder OR s.leased_until IS NULL
   OR s.leased_until <= coalesce($4::timestamptz, clock_timestamp())
RETURNING s.holder`

// releaseSingleton ends the named lease of holder; a lease another holder took is left alone.
const releaseSingleton = `DELETE FROM singleton_lease WHERE name = $1 AND holder = $2`

// lockWorkspaceRowForReplay and lockInstallationRowForReplay read the row bound to its
// workspace (every replay query binds the workspace) with FOR UPDATE: a concurrent replay waits
// and then reads the replayed row, so two replays make one transition; retention skips the
// locked row.
const (
	lockWorkspaceRowForReplay = `
SELECT ` + deliveryColumns + `, coalesce($3::timestamptz, clock_timestamp())
FROM provider_event e
WHERE e.id = $1 AND e.workspace_id = $2
FOR UPDATE`
	lockInstallationRowForReplay = `
SELECT ` + deliveryColumns + `, coalesce($2::timestamptz, clock_timestamp())
FROM provider_event e
WHERE e.id = $1 AND e.workspace_id IS NULL
FOR UPDATE`
)

// lockDeadRowsOfWorkspaceForReplay locks the rows of a bulk replay batch that are still DEAD
// rows of the workspace, in id order (two batches, or a batch and a single replay, lock shared
// rows in one order, so they wait for each other and never deadlock). FOR UPDATE waits for a
// single replay, retention or erasure holding a row and then rechecks it: a row that stopped
// being DEAD or was deleted meanwhile is not returned. A LEASED or QUEUED row fails the state
// test before any lock is taken, so a batch never waits for a handler.
const lockDeadRowsOfWorkspaceForReplay = `
SELECT ` + deliveryColumns + `, coalesce($3::timestamptz, clock_timestamp())
FROM provider_event e
WHERE e.id = ANY ($1::bigint[]) AND e.workspace_id = $2 AND e.state = 'DEAD'
ORDER BY e.id
FOR UPDATE`

// writeReplay writes the domain's Replay transition; state = 'DEAD' is the backstop.
const writeReplay = `
UPDATE provider_event
SET state = 'QUEUED', attempt = $2, unknown_failures = $3, due_at = $4, ended_at = NULL,
    error_class = NULL, replayed_by = NULLIF($5::bigint, 0), replayed_by_admin_token = ($5::bigint = 0),
    replayed_at = $6
WHERE id = $1 AND state = 'DEAD'`

// insertReplayAudit records an installation replay in the replay's transaction. Account id 0
// is the configured administrator token (ports.InstanceAdminAccountID), which is no account: it
// is recorded as that principal with no account id. An account's login is copied, so the
// record still names it however the account changes later.
const insertReplayAudit = `
INSERT INTO provider_event_replay_audit (event_id, account_id, replayed_at, workspace_id, principal, account_login)
SELECT $1, NULLIF($2::bigint, 0), $3, NULL,
       CASE WHEN $2::bigint = 0 THEN 'INSTANCE_ADMIN_TOKEN' ELSE 'ACCOUNT' END,
       (SELECT login FROM account WHERE id = $2::bigint)`
