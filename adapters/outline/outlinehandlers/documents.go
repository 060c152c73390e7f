package outlinehandlers

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// document mirrors a document event:
//
//  1. a retry that finds the mirror step committed goes straight to the event record, before
//     anything else is considered, so the record the earlier attempt missed is written;
//  2. the fast path: the stored document is already at this version (a redelivery, a replay,
//     or another event of the same edit), so there is nothing to mirror, and the event is
//     still recorded;
//  3. otherwise the mirror write, "outline.document.mirror", in its own transaction, then the
//     event record, "outline.event.record", in another.
func (b base) document(ctx context.Context, d ports.Dispatch) error {
	event := d.Delivery.EventType()
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Payload *struct {
			ID    string         `json:"id"`
			Model *documentModel `json:"model"`
		} `json:"payload"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.ID == "" || p.Payload == nil || p.Payload.Model == nil {
		return malformed(event, "a document event needs an id and a model")
	}
	eventID := d.Delivery.ID()
	deleted := p.Event == "documents.delete" || p.Event == "documents.permanent_delete"
	doc := p.Payload.Model.document(p.Payload.ID, deleted, eventID)
	if doc.ID == "" {
		return malformed(event, "the document has no id")
	}
	id := doc.ID
	rec := record(p.envelope, id, eventID)

	mirrored, err := b.deps.Inbox.Completed(ctx, StepDocumentMirror)
	if err != nil {
		return wrap(event, err)
	}
	if mirrored {
		return wrap(event, b.recordEvent(ctx, ws, rec))
	}
	stored, found, err := b.deps.Store.DocumentVersion(ctx, ws, id)
	if err != nil {
		return wrap(event, err)
	}
	if !(found && stored.Deleted == deleted && stored.Version.SameAs(doc.Version)) {
		err := b.step(ctx, StepDocumentMirror, func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.UpsertDocument(ctx, tx, ws, doc)
		})
		if err != nil {
			return wrap(event, err)
		}
	}
	return wrap(event, b.recordEvent(ctx, ws, rec))
}

// documentModel is an Outline document as its API presents it: the model of a document
// webhook and each entry of documents.list.
type documentModel struct {
	ID               string `json:"id"`
	CollectionID     string `json:"collectionId"`
	ParentDocumentID string `json:"parentDocumentId"`
	Title            string `json:"title"`
	Text             string `json:"text"`
	URLID            string `json:"urlId"`
	Revision         *int64 `json:"revision"`
	UpdatedAt        olTime `json:"updatedAt"`
	PublishedAt      olTime `json:"publishedAt"`
	ArchivedAt       olTime `json:"archivedAt"`
	DeletedAt        olTime `json:"deletedAt"`
	Collection       *struct {
		ID string `json:"id"`
	} `json:"collection"`
}

// document is the mirror row of m, the one conversion of webhooks and backfill pages: its id
// (fallbackID when the model has none), collection, and version (the later of updatedAt and
// deletedAt, the revision, and eventID, 0 outside dispatch).
func (m documentModel) document(fallbackID string, deleted bool, eventID int64) outlinemodel.Document {
	doc := outlinemodel.Document{
		ID: m.ID, CollectionID: m.CollectionID, ParentDocumentID: m.ParentDocumentID, Title: m.Title, Text: m.Text,
		URLID: m.URLID, PublishedAt: m.PublishedAt.ptr(), ArchivedAt: m.ArchivedAt.ptr(), Deleted: deleted,
		Version: outlinemodel.Version{EventID: eventID},
	}
	if doc.ID == "" {
		doc.ID = fallbackID
	}
	if doc.CollectionID == "" && m.Collection != nil {
		doc.CollectionID = m.Collection.ID
	}
	if at := m.UpdatedAt.later(m.DeletedAt); at.valid {
		doc.Version.UpdatedAt = at.t
	}
	if m.Revision != nil {
		doc.Version.Revision = *m.Revision
	}
	return doc
}

// collection mirrors a collection event in a step named by its purpose and the collection's
// stable id, then records the event in its own step.
func (b base) collection(ctx context.Context, d ports.Dispatch) error {
	event := d.Delivery.EventType()
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Payload *struct {
			ID    string           `json:"id"`
			Model *collectionModel `json:"model"`
		} `json:"payload"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.ID == "" || p.Payload == nil {
		return malformed(event, "a collection event needs an id and a payload")
	}
	c := outlinemodel.Collection{ID: p.Payload.ID, EventID: d.Delivery.ID()}
	if m := p.Payload.Model; m != nil {
		c = m.collection(p.Payload.ID, d.Delivery.ID())
	}
	purpose := "upsert"
	if p.Event == "collections.delete" {
		purpose, c.Deleted = "delete", true
	}
	if p.Event == "collections.archive" {
		c.Archived = true
	}
	step, err := CollectionStep(purpose, c.ID)
	if err != nil {
		return malformed(event, "the collection id cannot name a step")
	}
	err = b.step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertCollection(ctx, tx, ws, c)
	})
	if err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.recordEvent(ctx, ws, record(p.envelope, c.ID, c.EventID)))
}

// collectionModel is an Outline collection as its API presents it: the model of a collection
// webhook and the data of collections.info.
type collectionModel struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	URLID       string  `json:"urlId"`
	UpdatedAt   olTime  `json:"updatedAt"`
	ArchivedAt  olTime  `json:"archivedAt"`
	DeletedAt   olTime  `json:"deletedAt"`
}

// collection is the mirror row of m, the one conversion of webhooks and backfills: its id
// (fallbackID when the model has none) and version (the later of updatedAt and deletedAt, and
// eventID, 0 outside dispatch).
func (m collectionModel) collection(fallbackID string, eventID int64) outlinemodel.Collection {
	c := outlinemodel.Collection{ID: m.ID, Name: m.Name, Description: m.Description, URLID: m.URLID, Archived: m.ArchivedAt.valid,
		EventID: eventID}
	if c.ID == "" {
		c.ID = fallbackID
	}
	if at := m.UpdatedAt.later(m.DeletedAt); at.valid {
		c.UpdatedAt = at.t
	}
	return c
}

// recordOnly records an event that has nothing to mirror here.
func (b base) recordOnly(ctx context.Context, d ports.Dispatch) error {
	event := d.Delivery.EventType()
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Payload *struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.ID == "" {
		return malformed(event, "an event needs an id")
	}
	model := ""
	if p.Payload != nil {
		model = p.Payload.ID
	}
	return wrap(event, b.recordEvent(ctx, ws, record(p.envelope, model, d.Delivery.ID())))
}
