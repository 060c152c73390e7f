package outlinehandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Backfill pages (adapters/outline/outlinesync): a documents.list page is converted by the same
// documentModel.document as a document webhook, with event id 0, and written through the
// store's UpsertDocument, so the version rule decides as for a webhook: a page never
// overwrites a newer (or equally new, webhook-written) version, and a newer one always wins.
// The first page also carries the collection itself (collections.info), converted by
// collectionModel.collection and written by UpsertCollection under the same rule.

// BackfillWriter is the mirror store's side of a backfill page.
type BackfillWriter interface {
	// UpsertDocument writes a document when its version is not older than the stored one.
	UpsertDocument(ctx context.Context, tx ports.Tx, ws int64, d outlinemodel.Document) error
	// UpsertCollection writes a collection under the same rule.
	UpsertCollection(ctx context.Context, tx ports.Tx, ws int64, c outlinemodel.Collection) error
}

// BackfillPage is one decoded page of a collection's documents, and on the first page the
// collection.
type BackfillPage struct {
	collection *outlinemodel.Collection
	documents  []outlinemodel.Document
}

// DecodeBackfillCollection reads collections.info's data (the collection object) of
// collectionID. Errors: an answer without that shape, or about another collection.
func DecodeBackfillCollection(data json.RawMessage, collectionID string) (outlinemodel.Collection, error) {
	var m collectionModel
	if err := json.Unmarshal(data, &m); err != nil {
		return outlinemodel.Collection{}, fmt.Errorf("outline collection: %w", err)
	}
	c := m.collection(collectionID, 0)
	if c.ID != collectionID {
		return outlinemodel.Collection{}, errors.New("outline collection: the answer is about another collection")
	}
	c.Deleted = m.DeletedAt.valid
	return c, nil
}

// WithCollection is the page that also writes c, before its documents.
func (p BackfillPage) WithCollection(c outlinemodel.Collection) BackfillPage {
	p.collection = &c
	return p
}

// Items is how many documents the page writes.
func (p BackfillPage) Items() int { return len(p.documents) }

// Documents are the page's documents, in the order Outline listed them.
func (p BackfillPage) Documents() []outlinemodel.Document {
	return append([]outlinemodel.Document(nil), p.documents...)
}

// DecodeBackfillDocuments reads a documents.list page's data (a JSON array of documents) of
// collectionID. A document without an id, or of another collection, makes the page
// unreadable: Outline was asked for that collection's documents only. Errors: a page without
// that shape.
func DecodeBackfillDocuments(data json.RawMessage, collectionID string) (BackfillPage, error) {
	var models []documentModel
	if err := json.Unmarshal(data, &models); err != nil {
		return BackfillPage{}, fmt.Errorf("outline documents page: %w", err)
	}
	page := BackfillPage{documents: make([]outlinemodel.Document, 0, len(models))}
	for _, m := range models {
		d := m.document("", m.DeletedAt.valid, 0)
		if d.ID == "" {
			return BackfillPage{}, errors.New("outline documents page: a document has no id")
		}
		if d.CollectionID == "" {
			d.CollectionID = collectionID
		}
		if d.CollectionID != collectionID {
			return BackfillPage{}, errors.New("outline documents page: a document of another collection")
		}
		page.documents = append(page.documents, d)
	}
	return page, nil
}

// Write writes the page's collection, if it has one, then its documents in the order Outline
// listed them, in tx.
func (p BackfillPage) Write(ctx context.Context, tx ports.Tx, store BackfillWriter, ws int64) error {
	if p.collection != nil {
		if err := store.UpsertCollection(ctx, tx, ws, *p.collection); err != nil {
			return fmt.Errorf("backfill outline collection: %w", err)
		}
	}
	for _, d := range p.documents {
		if err := store.UpsertDocument(ctx, tx, ws, d); err != nil {
			return fmt.Errorf("backfill outline document: %w", err)
		}
	}
	return nil
}
