// Package beaconmirror is the PostgreSQL store of the Beacon mirror: the table beacon_incident.
// Writes run on the transaction of the DeliveryInbox step that claims them (through
// providerkit/mirrorkit, which publishes each change to the change feed in that transaction);
// the read API uses the store's pool. Every statement binds the workspace.
//
// The table's schema is Schema (schema.sql), written exactly as a migration under migrations/
// is. Beacon is the example provider and the server does not run it, so the file stays here,
// where only its spec harness applies it, and the production database gets no Beacon table; a
// real provider puts the same file in migrations/ (ARCHITECTURE.md "Adding a provider").
package beaconmirror

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Schema is the mirror's goose migration (schema.sql).
//
//go:embed schema.sql
var Schema string

var _ beaconmodel.Store = (*Store)(nil)

// upsertIncident writes an incident unless the stored version (source_updated_at,
// source_event_id) is newer; the row lock of ON CONFLICT serialises two writers of one incident.
const upsertIncident = `
INSERT INTO beacon_incident AS t (workspace_id, id, page_id, title, status, impact, author_id, author_name,
                                  resolved_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, $10, $11)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    page_id = excluded.page_id, title = excluded.title, status = excluded.status, impact = excluded.impact,
    author_id = excluded.author_id, author_name = excluded.author_name, resolved_at = excluded.resolved_at,
    source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

// upsertIncidentReporting is upsertIncident reporting whether it changed the row (mirrorkit).
var upsertIncidentReporting = mirrorkit.Reporting(
	`SELECT * FROM beacon_incident WHERE workspace_id = $1 AND id = $2`, upsertIncident)

const incidentColumns = `id, page_id, title, status, impact, coalesce(author_id, ''), coalesce(author_name, ''),
       resolved_at, source_updated_at`

const readIncident = `SELECT ` + incidentColumns + ` FROM beacon_incident WHERE workspace_id = $1 AND id = $2`

const countIncidents = `SELECT count(*) FROM beacon_incident WHERE workspace_id = $1`

const listIncidents = `SELECT ` + incidentColumns + ` FROM beacon_incident WHERE workspace_id = $1
ORDER BY source_updated_at DESC, id LIMIT $2 OFFSET $3`

// IncidentUpdated is the change the store publishes when a write changed an incident.
var IncidentUpdated = change.MustType("beacon.incident.updated")

// Views shapes an incident as the read API shows it (beaconread.Views), for the change feed.
type Views interface {
	Incident(beaconmodel.Incident) any
}

// Store is the Beacon mirror store.
type Store struct {
	// PersonData is the personal-data map person erasure runs (persondata.go).
	mirrorkit.PersonData
	pool *pgxpool.Pool
	feed mirrorkit.Feed[Views] // zero: no publishing
}

// New makes the store; pool serves the reads. Errors: a nil pool.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("beacon mirror store needs a database pool")
	}
	return &Store{PersonData: mirrorkit.NewPersonData(beacon.Provider, personData, mirrorkit.IDArgs(false, nil)), pool: pool}, nil
}

// PublishChanges makes the store publish its changes through pub, shaped by views. Call it
// once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	return s.feed.Set("beacon", pub, views)
}

// UpsertIncident writes i in tx under the version rule and publishes beacon.incident.updated
// when the write changed the row in anything but the event id.
func (s *Store) UpsertIncident(ctx context.Context, tx ports.Tx, ws int64, i beaconmodel.Incident) error {
	args := []any{ws, i.ID, i.PageID, i.Title, i.Status, i.Impact, i.AuthorID, i.AuthorName, i.ResolvedAt,
		sqlkit.At(i.UpdatedAt), i.EventID}
	return s.feed.Write(ctx, tx, ws, mirrorkit.Write{Op: "upsert beacon incident", Plain: upsertIncident,
		SQL: upsertIncidentReporting, Args: args, Subject: "beacon:incident:" + i.ID, Upserted: IncidentUpdated,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read beacon incident", readIncident, []any{ws, i.ID}, scanIncident, s.feed.Views().Incident)
		}})
}

// ListIncidents pages the workspace's incidents, most recently updated first. Errors: database
// failures.
func (s *Store) ListIncidents(ctx context.Context, ws int64, page ports.PageRequest) ([]beaconmodel.Incident, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, countIncidents, ws).Scan(&total); err != nil {
		return nil, 0, sqlkit.Interpret("count beacon incidents", err)
	}
	rows, err := s.pool.Query(ctx, listIncidents, ws, page.Size, page.Offset())
	if err != nil {
		return nil, 0, sqlkit.Interpret("list beacon incidents", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (beaconmodel.Incident, error) {
		var i beaconmodel.Incident
		return i, scanIncident(r, &i)
	})
	if err != nil {
		return nil, 0, sqlkit.Interpret("list beacon incidents", err)
	}
	return out, total, nil
}

func scanIncident(row pgx.Row, i *beaconmodel.Incident) error {
	var updated pgtype.Timestamptz
	err := row.Scan(&i.ID, &i.PageID, &i.Title, &i.Status, &i.Impact, &i.AuthorID, &i.AuthorName, &i.ResolvedAt, &updated)
	i.UpdatedAt = time.Time{}
	if updated.Valid && updated.InfinityModifier == pgtype.Finite {
		i.UpdatedAt = updated.Time.UTC()
	}
	return err
}
