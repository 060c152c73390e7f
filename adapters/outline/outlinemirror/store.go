// Package outlinemirror is the PostgreSQL store of the Outline mirror (migration 00006):
// documents, collections and event records. Writes run on the transaction of the DeliveryInbox
// step that claims them (sqlkit.PgxTx); the fast path's version read and the read API
// use the store's pool. Every statement binds the workspace.
package outlinemirror

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ outlinemodel.Store = (*Store)(nil)

// A document's version is (source_updated_at, revision, source_event_id): an older one never
// overwrites a newer one, and a version without an Outline timestamp is '-infinity'.
const upsertDocument = `
INSERT INTO outline_document AS t (workspace_id, id, collection_id, parent_document_id, title, text, url_id,
                                   revision, published_at, archived_at, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    collection_id      = COALESCE(excluded.collection_id, t.collection_id),
    parent_document_id = excluded.parent_document_id,
    title              = CASE WHEN excluded.deleted THEN t.title ELSE excluded.title END,
    text               = CASE WHEN excluded.deleted THEN '' ELSE excluded.text END,
    url_id             = COALESCE(NULLIF(excluded.url_id, ''), t.url_id),
    revision           = excluded.revision,
    published_at       = excluded.published_at,
    archived_at        = excluded.archived_at,
    deleted            = excluded.deleted,
    source_updated_at  = excluded.source_updated_at,
    source_event_id    = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.revision, excluded.source_event_id)
   >= (t.source_updated_at, t.revision, t.source_event_id)`

const documentVersion = `
SELECT source_updated_at, revision, source_event_id, deleted FROM outline_document WHERE workspace_id = $1 AND id = $2`

const upsertCollection = `
INSERT INTO outline_collection AS t (workspace_id, id, name, description, url_id, archived, deleted,
                                     source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    name        = COALESCE(NULLIF(excluded.name, ''), t.name),
    description = COALESCE(excluded.description, t.description),
    url_id      = COALESCE(NULLIF(excluded.url_id, ''), t.url_id),
    archived    = excluded.archived,
    deleted     = excluded.deleted,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

// recordEvent: the envelope id is the record's natural key; a second recording adds nothing.
const recordEvent = `
INSERT INTO outline_event (workspace_id, delivery_id, event, model_id, actor_id, occurred_at, source_event_id)
VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), $6, $7)
ON CONFLICT (workspace_id, delivery_id) DO NOTHING`

const countDocuments = `SELECT count(*) FROM outline_document WHERE workspace_id = $1 AND NOT deleted`

const listDocuments = `
SELECT id, coalesce(collection_id, ''), coalesce(parent_document_id, ''), title, url_id, revision,
       published_at, archived_at, source_updated_at
FROM outline_document WHERE workspace_id = $1 AND NOT deleted
ORDER BY source_updated_at DESC, id LIMIT $2 OFFSET $3`

// Store is the Outline mirror store.
type Store struct {
	// PersonData is the personal-data map erasure runs (persondata.go).
	mirrorkit.PersonData
	pool *pgxpool.Pool
	feed mirrorkit.Feed[Views] // the change feed's publisher (changes.go); zero: no publishing
}

// New makes the store; pool serves the reads.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("outline mirror store needs a database pool")
	}
	return &Store{PersonData: mirrorkit.NewPersonData(outline.Provider, outlinePersonData, personArgs), pool: pool}, nil
}

func finite(t pgtype.Timestamptz) time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return t.Time.UTC()
}

func exec(ctx context.Context, tx ports.Tx, op, sql string, args ...any) error {
	_, err := mirrorkit.Exec(ctx, tx, op, sql, args...)
	return err
}

func (s *Store) UpsertDocument(ctx context.Context, tx ports.Tx, ws int64, d outlinemodel.Document) error {
	args := []any{ws, d.ID, d.CollectionID, d.ParentDocumentID, d.Title, d.Text, d.URLID, d.Version.Revision,
		d.PublishedAt, d.ArchivedAt, d.Deleted, sqlkit.At(d.Version.UpdatedAt), d.Version.EventID}
	return s.feed.Write(ctx, tx, ws, s.documentWrite(ws, args, d.ID))
}

func (s *Store) UpsertCollection(ctx context.Context, tx ports.Tx, ws int64, c outlinemodel.Collection) error {
	args := []any{ws, c.ID, c.Name, c.Description, c.URLID, c.Archived, c.Deleted, sqlkit.At(c.UpdatedAt), c.EventID}
	return s.feed.Write(ctx, tx, ws, s.collectionWrite(ws, args, c.ID))
}

func (s *Store) RecordEvent(ctx context.Context, tx ports.Tx, ws int64, e outlinemodel.Event) error {
	return exec(ctx, tx, "record outline event", recordEvent,
		ws, e.DeliveryID, e.Event, e.ModelID, e.ActorID, e.OccurredAt, e.EventID)
}

// DocumentVersion reads the stored version without a lock. Errors: database failures.
func (s *Store) DocumentVersion(ctx context.Context, ws int64, id string) (outlinemodel.StoredVersion, bool, error) {
	var (
		v       outlinemodel.StoredVersion
		updated pgtype.Timestamptz
	)
	err := s.pool.QueryRow(ctx, documentVersion, ws, id).Scan(&updated, &v.Version.Revision, &v.Version.EventID, &v.Deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		return outlinemodel.StoredVersion{}, false, nil
	}
	if err != nil {
		return outlinemodel.StoredVersion{}, false, sqlkit.Interpret("read outline document version", err)
	}
	v.Version.UpdatedAt = finite(updated)
	return v, true, nil
}

// ListDocuments pages the workspace's documents, most recently updated first, without deleted
// ones and without their text. Errors: database failures.
func (s *Store) ListDocuments(ctx context.Context, ws int64, page ports.PageRequest) ([]outlinemodel.Document, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, countDocuments, ws).Scan(&total); err != nil {
		return nil, 0, sqlkit.Interpret("count outline documents", err)
	}
	rows, err := s.pool.Query(ctx, listDocuments, ws, page.Size, page.Offset())
	if err != nil {
		return nil, 0, sqlkit.Interpret("list outline documents", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outlinemodel.Document, error) {
		var (
			d       outlinemodel.Document
			updated pgtype.Timestamptz
		)
		err := r.Scan(&d.ID, &d.CollectionID, &d.ParentDocumentID, &d.Title, &d.URLID, &d.Version.Revision,
			&d.PublishedAt, &d.ArchivedAt, &updated)
		d.Version.UpdatedAt = finite(updated)
		return d, err
	})
	if err != nil {
		return nil, 0, sqlkit.Interpret("list outline documents", err)
	}
	return out, total, nil
}
