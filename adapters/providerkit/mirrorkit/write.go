package mirrorkit

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Returning is the RETURNING clause of a reporting upsert into the table aliased t, whose WITH
// prior reads the stored row the upsert is about to write: whether the written row differs
// from the prior one in anything but the event id that wrote it (a new row always does),
// whether it is a tombstone, and version, the row's version as SQL text (the change's
// version). A row the version rule refused returns nothing.
func Returning(version string) string {
	return `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id'), t.deleted, ` + version
}

// ChangedRow is Returning for a row versioned (source_updated_at, source_event_id).
var ChangedRow = Returning(sqlkit.MirrorVersion("t"))

// Reporting makes the reporting upsert of upsert (whose table is aliased t): prior reads the
// row it is about to write, bound to the upsert's own key parameters.
func Reporting(prior, upsert string) string {
	return ReportingAs(prior, upsert, ChangedRow)
}

// ReportingAs is Reporting with its own RETURNING clause (Returning with another version).
func ReportingAs(prior, upsert, returning string) string {
	return "\nWITH prior AS (" + prior + ")" + upsert + returning
}

// Report runs a reporting write in ptx and tells whether it changed the row, whether the row
// is now a tombstone and the row's version; a write the version rule refused changed nothing.
func Report(ctx context.Context, ptx pgx.Tx, op, sql string, args ...any) (changed, deleted bool, version string, err error) {
	err = ptx.QueryRow(ctx, sql, args...).Scan(&changed, &deleted, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, "", nil // lost to the version rule
	}
	return changed, deleted, version, sqlkit.Interpret(op, err)
}

// Write is one reporting write and the change it publishes when it changed the row.
type Write struct {
	Op    string // the write's name in errors
	Plain string // the write without reporting, for a store that publishes nothing
	SQL   string // the reporting write (Reporting)
	Args  []any  // the parameters of both
	// Subject is the changed entity's subject. A membership is published under the subject of
	// what the person is a member of, never one naming the user's id: person erasure of the
	// feed rewrites a change's data and keeps its subject.
	Subject  string
	Upserted change.Type
	Deleted  change.Type // zero: a tombstone is published as Upserted (the table never deletes)
	Key      any         // a deletion's data (the entity's key); nil: the view
	// View reads the entity back in the write's transaction and shapes it as the read API
	// shows it.
	View func(ctx context.Context, ptx pgx.Tx) (any, error)
}

// Write runs w in tx and publishes its change when it changed the row (WriteAll).
func (f Feed[V]) Write(ctx context.Context, tx ports.Tx, ws int64, w Write) error {
	return f.WriteAll(ctx, tx, ws, []Write{w})
}

// WriteAll runs the writes in the order given (callers sort by key, so row locks are taken in
// key order), each publishing its change when it changed the row. Without a publisher it runs
// their Plain statements in one round trip.
func (f Feed[V]) WriteAll(ctx context.Context, tx ports.Tx, ws int64, writes []Write) error {
	if len(writes) == 0 {
		return nil
	}
	if !f.On() {
		return Batch(ctx, tx, writes[0].Op, writes, func(w Write) (string, []any) { return w.Plain, w.Args })
	}
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	for _, w := range writes {
		changed, deleted, version, err := Report(ctx, ptx, w.Op, w.SQL, w.Args...)
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		if err := f.publishWritten(ctx, tx, ptx, ws, w, deleted, version); err != nil {
			return err
		}
	}
	return nil
}

// publishWritten publishes the change of w, which changed its row (a tombstone when deleted)
// to version.
func (f Feed[V]) publishWritten(ctx context.Context, tx ports.Tx, ptx pgx.Tx, ws int64, w Write, deleted bool, version string) error {
	t, data := w.Upserted, w.Key
	if deleted && !w.Deleted.IsZero() {
		t = w.Deleted
	}
	if t == w.Upserted || data == nil {
		var err error
		if data, err = w.View(ctx, ptx); err != nil {
			return err
		}
	}
	return f.Publish(ctx, tx, ws, t, w.Subject, version, data)
}

// Read scans one view row of sql in the write's transaction (op names it in errors) and shapes
// it.
func Read[R any](ctx context.Context, ptx pgx.Tx, op, sql string, args []any, scan func(pgx.Row, *R) error, shape func(R) any) (any, error) {
	var r R
	if err := scan(ptx.QueryRow(ctx, sql, args...), &r); err != nil {
		return nil, sqlkit.Interpret(op, err)
	}
	return shape(r), nil
}
