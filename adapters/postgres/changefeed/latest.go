package changefeed

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/domain/change"
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
	var watermark string
	if err := s.pool.QueryRow(ctx, readSettledWatermark).Scan(&watermark); err != nil {
		return nil, pgutil.Interpret("read change watermark", err)
	}
	rows, _ := s.pool.Query(ctx, readSettledLatest, workspaceID, limit, watermark)
	out, err := pgx.CollectRows(rows, scanChange)
	if err != nil {
		return nil, pgutil.Interpret("read latest changes", err)
	}
	slices.Reverse(out)
	return out, nil
}
