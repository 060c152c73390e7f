// Package beaconmodel is the Beacon provider's model: an incident as the handlers write it,
// with the version that orders its writes, and the mirror store interface the handlers write
// through (Store). The mirror store (beaconmirror) and the read API (beaconread) import this
// package, not the handlers (beaconhandlers).
package beaconmodel

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// Incident is a Beacon incident as the mirror keeps it. Its version is (UpdatedAt, EventID):
// Beacon's updatedAt, then the inbox row whose handler wrote it (0 outside dispatch), so an
// older delivery never overwrites a newer one.
type Incident struct {
	ID         string
	PageID     string
	Title      string
	Status     string // investigating, identified, monitoring, resolved
	Impact     string // none, minor, major, critical
	AuthorID   string // the person who wrote the latest update; "" once erased
	AuthorName string
	ResolvedAt *time.Time
	UpdatedAt  time.Time
	EventID    int64
}

// Store is the Beacon mirror store, shaped by the handlers. A write takes the opaque ports.Tx of
// the step that claims it, so it commits with the step row or not at all.
type Store interface {
	// UpsertIncident writes an incident when its version is not older than the stored one.
	UpsertIncident(ctx context.Context, tx ports.Tx, ws int64, i Incident) error
}
