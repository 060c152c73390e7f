package changes

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Latest returns the newest limit changes of who's workspace that ReadAs could hand out now,
// in cursor order, as who may see them (the head of the feed, where a live view opens; the
// last one's cursor is where ReadAs continues). It never waits, and checks who in the snapshot
// of its page as ReadAs does. Errors: those of ReadAs but for waiting.
func (f *Feed) Latest(ctx context.Context, who ports.FeedReader, limit int) ([]change.Stored, error) {
	page, state, err := f.store.LatestChangesFor(ctx, who, limit)
	if err != nil {
		return nil, err
	}
	return shown(who, state, page)
}
