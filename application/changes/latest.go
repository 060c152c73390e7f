package changes

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/change"
)

// Latest returns the newest limit changes of the workspace that Read could hand out now, in
// cursor order (the head of the feed, where a live view opens; the last one's cursor is where
// Read continues). It never waits. Errors: the store's.
func (f *Feed) Latest(ctx context.Context, workspaceID int64, limit int) ([]change.Stored, error) {
	return f.store.LatestChanges(ctx, workspaceID, limit)
}
