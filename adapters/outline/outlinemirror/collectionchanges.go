package outlinemirror

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
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
	Collection(outlinemodel.Collection) any
}

var upsertCollectionReporting = mirrorkit.Reporting(
	`SELECT * FROM outline_collection WHERE workspace_id = $1 AND id = $2`, upsertCollection)

const (
	readCollectionView = `
SELECT id, name, description, url_id, archived, source_updated_at
FROM outline_collection WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) collectionWrite(ws int64, args []any, id string) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert outline collection", Plain: upsertCollection, SQL: upsertCollectionReporting, Args: args,
		Subject: "outline:collection:" + id, Upserted: CollectionUpdated, Deleted: CollectionDeleted, Key: map[string]string{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read outline collection", readCollectionView, []any{ws, id}, func(row pgx.Row, c *outlinemodel.Collection) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&c.ID, &c.Name, &c.Description, &c.URLID, &c.Archived, &updated)
				c.UpdatedAt = finite(updated)
				return err
			}, s.feed.Views().Collection)
		}}
}
