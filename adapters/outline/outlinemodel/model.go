// Package outlinemodel is the Outline provider's model: documents (with the Version rule that
// orders their writes), collections and event records as the handlers write them, and the
// mirror store interface the handlers write through (Store). The mirror store (outlinemirror)
// and the read API (outlineread) import this package, not the handlers (outlinehandlers).
package outlinemodel

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// Version is a document's version: Outline's updatedAt and, where the payload has it, its
// revision number. EventID, the inbox row whose handler wrote it, breaks ties between
// deliveries of one version (0 outside dispatch).
type Version struct {
	UpdatedAt time.Time
	Revision  int64
	EventID   int64
}

// SameAs reports whether two versions name the same document state (the fast path's test);
// the delivery that wrote it does not matter.
func (v Version) SameAs(o Version) bool {
	return v.UpdatedAt.Equal(o.UpdatedAt) && v.Revision == o.Revision
}

// Document is an Outline document as the mirror keeps it.
type Document struct {
	ID               string
	CollectionID     string
	ParentDocumentID string
	Title            string
	Text             string
	URLID            string
	PublishedAt      *time.Time
	ArchivedAt       *time.Time
	Deleted          bool
	Version          Version
}

// StoredVersion is what the fast path compares against.
type StoredVersion struct {
	Version Version
	Deleted bool
}

// Collection is an Outline collection.
type Collection struct {
	ID          string
	Name        string
	Description *string
	URLID       string
	Archived    bool
	Deleted     bool
	UpdatedAt   time.Time
	EventID     int64
}

// Event is the record of one Outline event, by its envelope id.
type Event struct {
	DeliveryID string
	Event      string
	ModelID    string
	ActorID    string
	OccurredAt *time.Time
	EventID    int64
}

// Store is the Outline mirror store, shaped by the handlers (outlinehandlers). Writes take the
// opaque ports.Tx of the step that claims them, so they commit with the step row or not at all.
type Store interface {
	// DocumentVersion reads the stored version of a document without a lock (the fast path's
	// read, outside any transaction). false: not mirrored.
	DocumentVersion(ctx context.Context, ws int64, documentID string) (StoredVersion, bool, error)
	// UpsertDocument writes a document when its version is not older than the stored one.
	UpsertDocument(ctx context.Context, tx ports.Tx, ws int64, d Document) error
	// UpsertCollection writes a collection under the same rule, by its stable id.
	UpsertCollection(ctx context.Context, tx ports.Tx, ws int64, c Collection) error
	// RecordEvent records the event once by its envelope id.
	RecordEvent(ctx context.Context, tx ports.Tx, ws int64, e Event) error
}
