package outlinemirror

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Collections publish as documents do (changes.go): outline.collection.updated with the
// collection shaped like its mirror row when the upsert changed the row in anything but the
// event id, outline.collection.deleted when it made it a tombstone; nothing otherwise.

// The collection change types.
var (
	CollectionUpdated = change.MustType("outline.collection.updated")
	CollectionDeleted = change.MustType("outline.collection.deleted")
)

// CollectionViews shapes a collection for the change feed (outlineread.Views).
type CollectionViews interface {
	Collection(outlinehandlers.Collection) any
}

var upsertCollectionReportingChange = `
WITH prior AS (SELECT * FROM outline_collection WHERE workspace_id = $1 AND id = $2)` + upsertCollection + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id'), t.deleted, ` + sqlkit.MirrorVersion("t")

const (
	readCollectionView = `
SELECT id, name, description, url_id, archived, source_updated_at
FROM outline_collection WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) upsertCollectionPublishing(ctx context.Context, tx ports.Tx, ws int64, args []any, id string) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	var (
		changed, deleted bool
		version          string
	)
	err = ptx.QueryRow(ctx, upsertCollectionReportingChange, args...).Scan(&changed, &deleted, &version)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !changed) {
		return nil // refused by the version rule, or nothing but the event id changed
	}
	if err != nil {
		return sqlkit.Interpret("upsert outline collection", err)
	}
	subject := "outline:collection:" + id
	var data any = map[string]string{"id": id}
	t := CollectionDeleted
	if !deleted {
		var (
			c       outlinehandlers.Collection
			updated pgtype.Timestamptz
		)
		err = ptx.QueryRow(ctx, readCollectionView, ws, id).Scan(&c.ID, &c.Name, &c.Description, &c.URLID, &c.Archived, &updated)
		if err != nil {
			return sqlkit.Interpret("read outline collection", err)
		}
		c.UpdatedAt = finite(updated)
		data, t = s.feed.views.Collection(c), CollectionUpdated
	}
	ch, err := change.NewVersioned(t, subject, version, data)
	if err != nil {
		return err
	}
	return s.feed.pub.Publish(ctx, tx, ws, ch)
}
