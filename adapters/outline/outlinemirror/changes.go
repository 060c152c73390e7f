package outlinemirror

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Publishing to the change feed, as the GitHub mirror does (see githubmirror/changes.go): the
// document upsert reports whether the version rule let it write and whether it wrote anything
// but a new event id; only then is outline.document.updated (or outline.document.deleted) published
// in the write's transaction, with the document as the read API shows it.

// The change types this store publishes.
var (
	DocumentUpdated = change.MustType("outline.document.updated")
	DocumentDeleted = change.MustType("outline.document.deleted")
)

// Views shapes mirrored rows as the read API shows them (outlineread.Views).
type Views interface {
	Document(outlinemodel.Document) any
	CollectionViews
}

// PublishChanges makes the store publish its changes through pub, shaped by views. Call it
// once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	return s.feed.Set("outline", pub, views)
}

// upsertDocumentReporting returns whether the write changed the row, whether it is a
// tombstone and its version: the document's rule compares (source_updated_at, revision,
// source_event_id).
var upsertDocumentReporting = mirrorkit.ReportingAs(
	`SELECT * FROM outline_document WHERE workspace_id = $1 AND id = $2`, upsertDocument, mirrorkit.Returning(
		sqlkit.VersionOf(sqlkit.VersionTime("t.source_updated_at"), sqlkit.VersionNumber("t.revision"), sqlkit.VersionNumber("t.source_event_id"))))

const (
	// readDocumentView is the read API's list row for one document.
	readDocumentView = `
SELECT id, coalesce(collection_id, ''), coalesce(parent_document_id, ''), title, url_id, revision,
       published_at, archived_at, source_updated_at
FROM outline_document WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) documentWrite(ws int64, args []any, id string) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert outline document", Plain: upsertDocument, SQL: upsertDocumentReporting, Args: args,
		Subject: "outline:document:" + id, Upserted: DocumentUpdated, Deleted: DocumentDeleted, Key: map[string]string{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read outline document", readDocumentView, []any{ws, id}, func(row pgx.Row, d *outlinemodel.Document) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&d.ID, &d.CollectionID, &d.ParentDocumentID, &d.Title, &d.URLID, &d.Version.Revision,
					&d.PublishedAt, &d.ArchivedAt, &updated)
				d.Version.UpdatedAt = finite(updated)
				return err
			}, s.feed.Views().Document)
		}}
}

// Collections publish as documents do (above): outline.collection.updated with the
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
