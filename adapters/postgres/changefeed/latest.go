package changefeed

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// readSettledLatest is the head of a workspace's feed: its newest changes below the watermark
// ($3, readSettledWatermark, read before this statement's snapshot, for the reason
// readSettledChangesAfter gives), newest first. One backward walk of ix_workspace_change_feed
// from the workspace's end, of at most $2 entries past those at or above the watermark.
const readSettledLatest = `
SELECT c.id, c.xid::text AS xid_text, c.type, c.subject, c.occurred_at, c.data
FROM workspace_change c
WHERE c.workspace_id = $1
  AND c.xid < $3::text::xid8
ORDER BY c.xid DESC, c.id DESC
LIMIT $2`

// LatestChanges implements ports.ChangeFeed.
func (s *Store) LatestChanges(ctx context.Context, workspaceID int64, limit int) ([]change.Stored, error) {
	out, _, err := s.latest(ctx, workspaceID, nil, limit)
	return out, err
}

// LatestChangesFor implements ports.ChangeFeed.
func (s *Store) LatestChangesFor(ctx context.Context, r ports.FeedReader, limit int) ([]change.Stored, ports.FeedReaderState, error) {
	return s.latest(ctx, r.WorkspaceID, &r, limit)
}

// latest reads the head, and with r its reader's state in the same snapshot (Store.changes
// says why the same).
func (s *Store) latest(ctx context.Context, workspaceID int64, r *ports.FeedReader, limit int) ([]change.Stored, ports.FeedReaderState, error) {
	out, state, err := s.readSettled(ctx, r, func(ctx context.Context, tx pgx.Tx, watermark string) ([]change.Stored, error) {
		rows, _ := tx.Query(ctx, readSettledLatest, workspaceID, limit, watermark)
		out, err := pgx.CollectRows(rows, scanChange)
		return out, sqlkit.Interpret("read latest changes", err)
	})
	if err != nil {
		return nil, state, err
	}
	slices.Reverse(out)
	return out, state, nil
}
