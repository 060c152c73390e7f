package changefeed

// publishChange inserts one change of the current transaction; xid defaults to
// pg_current_xact_id(), the id of the writing transaction.
const publishChange = `
INSERT INTO workspace_change (workspace_id, type, subject, data) VALUES ($1, $2, $3, $4)`

// readFeedHorizon reads the highest cursor retention deleted in the workspace (none: no row).
const readFeedHorizon = `
SELECT xid::text, id FROM workspace_change_horizon WHERE workspace_id = $1`

// readSettledChangesAfter is a feed page: the workspace's changes after the cursor in
// (xid, id) order, restricted to transactions older than the statement snapshot's xmin.
// Every transaction with an xid below xmin has ended (committed or rolled back) and is
// visible to this snapshot, and every transaction still in flight or yet to write has an xid
// at or above it: so the set of rows below xmin can no longer grow, and a cursor handed out
// from it is never passed by a later commit. pg_current_snapshot() is the statement's own
// snapshot, the one the rows are read with. One descent of ix_workspace_change_feed to the
// cursor and a walk of at most $4 entries. (The text of xid is aliased: ORDER BY xid would
// sort by an output column named xid, the text, before the table's column.)
const readSettledChangesAfter = `
SELECT c.id, c.xid::text AS xid_text, c.type, c.subject, c.occurred_at, c.data
FROM workspace_change c
WHERE c.workspace_id = $1
  AND (c.xid, c.id) > ($2::text::xid8, $3)
  AND c.xid < pg_snapshot_xmin(pg_current_snapshot())
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
