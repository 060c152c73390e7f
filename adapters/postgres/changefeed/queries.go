package changefeed

import "github.com/hephaestus-dev/hephaestus/adapters/sqlkit"

// publishChange inserts one change of the current transaction; xid defaults to
// pg_current_xact_id(), the id of the writing transaction. A change whose data has no version
// (an entity the mirror does not version: a connection, a teardown, a Slack channel) gets the
// database's clock at the insert as its version: its writer holds the entity's row lock to
// commit, so a writer that commits later reads a later clock.
var publishChange = `
INSERT INTO workspace_change (workspace_id, type, subject, data)
VALUES ($1, $2, $3, CASE WHEN $4::jsonb ? 'version' THEN $4::jsonb
                         ELSE $4::jsonb || jsonb_build_object('version', ` + sqlkit.VersionTime("clock_timestamp()") + `) END)`

// readFeedHorizon reads the highest cursor retention deleted in the workspace (none: no row).
const readFeedHorizon = `
SELECT xid::text, id FROM workspace_change_horizon WHERE workspace_id = $1`

// readSettledWatermark is the feed's visibility limit: the lowest transaction id that may still
// commit a change in this database, as a decimal xid8. It is the least of the snapshot's xmax
// (every transaction that has no xid yet will get one at or above it) and the xids of this
// snapshot's in-flight transactions that belong to a session of this database (pg_stat_activity
// and prepared transactions; a transaction of another database cannot write workspace_change,
// so an open transaction elsewhere in the cluster never holds the feed back). pg_stat_activity
// gives 32-bit xids, matched against the low 32 bits of the snapshot's xid8s. It must run as its
// own statement BEFORE the snapshot that reads the page: an in-flight transaction of this
// snapshot that ends before pg_stat_activity is read is not counted, and that is safe only
// because the page's later snapshot sees it ended.
const readSettledWatermark = `
WITH s AS (SELECT pg_current_snapshot() AS snap),
local_xids AS (
	SELECT a.backend_xid::text::numeric AS x32 FROM pg_stat_activity a
	WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL
	UNION ALL
	SELECT p.transaction::text::numeric FROM pg_prepared_xacts p WHERE p.database = current_database()
)
SELECT least(
	(SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x
	 WHERE x::text::numeric % 4294967296 IN (SELECT x32 FROM local_xids)),
	(SELECT pg_snapshot_xmax(snap) FROM s))::text`

// readSettledChangesAfter is a feed page: the workspace's changes after the cursor in
// (xid, id) order, restricted to transactions below the watermark ($5, readSettledWatermark,
// read before this statement's snapshot). Every transaction of this database with an xid below
// it had ended when the watermark was read, so it is visible to this later snapshot, and every
// transaction still in flight or yet to write has an xid at or above it: the set of rows below
// the watermark can no longer grow, and a cursor handed out from it is never passed by a later
// commit. One descent of ix_workspace_change_feed to the cursor and a walk of at most $4
// entries. (The text of xid is aliased: ORDER BY xid would sort by an output column named xid,
// the text, before the table's column.)
const readSettledChangesAfter = `
SELECT c.id, c.xid::text AS xid_text, c.type, c.subject, c.occurred_at, c.data
FROM workspace_change c
WHERE c.workspace_id = $1
  AND (c.xid, c.id) > ($2::text::xid8, $3)
  AND c.xid < $5::text::xid8
ORDER BY c.xid, c.id
LIMIT $4`

// deleteChangesBefore deletes a batch of the oldest changes and raises each workspace's
// horizon to the highest cursor it deleted (raising only: batches may delete out of cursor
// order, since occurred_at and xid order differ by the length of a transaction).
const deleteChangesBefore = `
WITH doomed AS (
	SELECT id FROM workspace_change WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2
), gone AS (
	DELETE FROM workspace_change c USING doomed d WHERE c.id = d.id
	RETURNING c.workspace_id, c.xid, c.id
), top AS (
	SELECT DISTINCT ON (workspace_id) workspace_id, xid, id FROM gone ORDER BY workspace_id, xid DESC, id DESC
), raised AS (
	INSERT INTO workspace_change_horizon AS h (workspace_id, xid, id)
	SELECT workspace_id, xid, id FROM top
	ON CONFLICT (workspace_id) DO UPDATE SET xid = excluded.xid, id = excluded.id
	WHERE (excluded.xid, excluded.id) > (h.xid, h.id)
)
SELECT count(*) FROM gone`

// countChanges sizes the feed (an index-only scan of the retention index).
const countChanges = `SELECT count(*) FROM workspace_change`

// readFeedReader is a feed reader's state, read in the snapshot of the page it guards (the
// same REPEATABLE READ transaction): whether the principal's token ($3 of account $2) is still
// stored, unexpired at the database's clock and of an enabled account whose instance
// administrator flag is $5 ($4: the configured administrator token, which is no account and
// cannot be revoked while the server runs); whether workspace $1 exists; and $2's role in it
// (NULL: no member). Three primary-key lookups (account_token, account, workspace) and one of
// workspace_member's key; no lock (a revocation that commits after this snapshot is seen by
// the next read, and nothing in this page committed after it).
const readFeedReader = `
SELECT
	$4::boolean OR EXISTS (
		SELECT 1 FROM account_token t JOIN account a ON a.id = t.account_id
		WHERE t.id = $3 AND t.account_id = $2 AND a.disabled_at IS NULL AND a.instance_admin = $5
		  AND (t.expires_at IS NULL OR t.expires_at > clock_timestamp())),
	EXISTS (SELECT 1 FROM workspace w WHERE w.id = $1),
	coalesce((SELECT m.role FROM workspace_member m WHERE m.workspace_id = $1 AND m.account_id = $2), '')`
