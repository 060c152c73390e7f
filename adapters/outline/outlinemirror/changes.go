package outlinemirror

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
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
	Document(outlinehandlers.Document) any
	CollectionViews
}

type feed struct {
	pub     ports.ChangePublisher
	remover ports.ChangeRemover
	views   Views
}

// PublishChanges makes the store publish its document changes through pub, shaped by views.
// Call it once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	if pub == nil || views == nil {
		return errors.New("outline mirror: a publisher and the read API's views are required")
	}
	remover, ok := pub.(ports.ChangeRemover)
	if !ok {
		return errors.New("outline mirror: the publisher must also remove torn-down changes (ports.ChangeRemover)")
	}
	s.feed = feed{pub: pub, remover: remover, views: views}
	return nil
}

// upsertDocumentReportingChange returns whether the write changed the row, whether it is a
// tombstone and its version: the document's rule compares (source_updated_at, revision,
// source_event_id).
var upsertDocumentReportingChange = `
WITH prior AS (SELECT * FROM outline_document WHERE workspace_id = $1 AND id = $2)` + upsertDocument + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id'), t.deleted, ` +
	sqlkit.VersionOf(sqlkit.VersionTime("t.source_updated_at"), sqlkit.VersionNumber("t.revision"), sqlkit.VersionNumber("t.source_event_id"))

const (
	// readDocumentView is the read API's list row for one document.
	readDocumentView = `
SELECT id, coalesce(collection_id, ''), coalesce(parent_document_id, ''), title, url_id, revision,
       published_at, archived_at, source_updated_at
FROM outline_document WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) upsertDocumentPublishing(ctx context.Context, tx ports.Tx, ws int64, args []any, id string) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	var (
		changed, deleted bool
		version          string
	)
	err = ptx.QueryRow(ctx, upsertDocumentReportingChange, args...).Scan(&changed, &deleted, &version)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !changed) {
		return nil // refused by the version rule, or nothing but the event id changed
	}
	if err != nil {
		return sqlkit.Interpret("upsert outline document", err)
	}
	subject := "outline:document:" + id
	if deleted {
		c, err := change.NewVersioned(DocumentDeleted, subject, version, map[string]string{"id": id})
		if err != nil {
			return err
		}
		return s.feed.pub.Publish(ctx, tx, ws, c)
	}
	var (
		d       outlinehandlers.Document
		updated pgtype.Timestamptz
	)
	err = ptx.QueryRow(ctx, readDocumentView, ws, id).Scan(&d.ID, &d.CollectionID, &d.ParentDocumentID, &d.Title,
		&d.URLID, &d.Version.Revision, &d.PublishedAt, &d.ArchivedAt, &updated)
	if err != nil {
		return sqlkit.Interpret("read outline document", err)
	}
	d.Version.UpdatedAt = finite(updated)
	c, err := change.NewVersioned(DocumentUpdated, subject, version, s.feed.views.Document(d))
	if err != nil {
		return err
	}
	return s.feed.pub.Publish(ctx, tx, ws, c)
}

// publishTeardown removes the data of the torn-down changes sel selects and publishes
// connection.torn_down with what went, in the teardown's transaction.
func (s *Store) publishTeardown(ctx context.Context, tx ports.Tx, ws, conn int64, sel ports.ChangeSelection,
	resources []change.TornDownResource, everything bool) error {
	if s.feed.pub == nil {
		return nil
	}
	return ports.PublishTeardown(ctx, tx, s.feed.pub, s.feed.remover, ws, sel, change.TornDown{
		ConnectionID: conn, Provider: outline.Provider.String(), Resources: resources, Everything: everything})
}
