package admissionstore

// Why this file: pgx's transactions send BEGIN and COMMIT, two statements and a round trip
// per delivery that admission does without. The pipeline here drives the extended protocol by
// hand: statements queued on one connection, answered at a Flush, committed at the Sync.

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// statements are one connection's prepared admission statements (pgx keeps them per
// connection; preparing again is a map lookup).
type statements struct {
	routesByID, routesByKey, lock, lockRemembered, insertOne, insertMany *pgconn.StatementDescription
}

// admissionTx is one admission transaction: a pipeline on one connection, opened by the first
// statement. held remembers the connections whose lifecycle lock Routes already took, so
// LockConnections costs no second round trip.
type admissionTx struct {
	conn  *pgx.Conn
	stmt  statements
	args  pgx.ExtendedQueryBuilder
	row   rowParams        // insertOne's parameters
	pipe  *pgconn.Pipeline // nil until the first statement
	ended bool             // a Sync ended the transaction (Insert's, or end's)
	held  map[int64]ports.LockedConnection

	readEpoch   *int64 // the route epoch of the routes statement's snapshot, once Routes read them
	routesMoved bool   // the insert found readEpoch no longer current and stored nothing

	store   *Store // the first run's, which connects only when it must (see Admit)
	release func() // returns the connection connect took

	memory    *routeMemory
	group     *groupCommit // where Insert stores rows on recalled routes
	recalled  *remembered  // what Routes answered from memory
	confirmed bool         // Insert stored rows on the recalled routes
}

func (t *admissionTx) prepare(ctx context.Context) error {
	for _, p := range []struct {
		sd   **pgconn.StatementDescription
		name string
		sql  string
	}{
		{&t.stmt.routesByID, "hx_admission_routes_by_id", routesBySourceID},
		{&t.stmt.routesByKey, "hx_admission_routes_by_key", routesBySourceKey},
		{&t.stmt.lock, "hx_admission_lock", lockConnections},
		{&t.stmt.insertOne, "hx_admission_insert_one", insertDeliverySQL},
		{&t.stmt.insertMany, "hx_admission_insert_many", insertDeliveriesSQL},
		{&t.stmt.lockRemembered, "hx_admission_lock_remembered", lockRemembered},
	} {
		sd, err := t.conn.Prepare(ctx, p.name, p.sql)
		if err != nil {
			return err
		}
		*p.sd = sd
	}
	return nil
}

// queue adds sd with args to the transaction's pipeline, opening it with the first statement.
func (t *admissionTx) queue(ctx context.Context, sd *pgconn.StatementDescription, args []any) error {
	if err := t.args.Build(t.conn.TypeMap(), sd, args); err != nil {
		return err
	}
	t.queueEncoded(ctx, sd, t.args.ParamValues, t.args.ParamFormats, t.args.ResultFormats)
	return nil
}

// queueEncoded is queue for parameters already encoded in the given formats (nil formats:
// all text; a nil value is NULL).
func (t *admissionTx) queueEncoded(ctx context.Context, sd *pgconn.StatementDescription, values [][]byte, formats, resultFormats []int16) {
	if t.pipe == nil {
		t.pipe = t.conn.PgConn().StartPipeline(ctx)
	}
	t.pipe.SendQueryStatement(sd, values, formats, resultFormats)
}

// send queues sd with args and sends what the pipeline holds: with a Flush message, which
// makes the server answer and keeps the implicit transaction open, or with the Sync that
// commits it.
func (t *admissionTx) send(ctx context.Context, sd *pgconn.StatementDescription, args []any, commit bool) error {
	if err := t.queue(ctx, sd, args); err != nil {
		return err
	}
	if commit {
		return t.pipe.Sync()
	}
	t.pipe.SendFlushRequest() // the protocol's Flush: answer now, keep the transaction open
	return t.pipe.Flush()
}

// result is the next statement's result.
func (t *admissionTx) result() (*pgconn.ResultReader, error) {
	r, err := t.pipe.GetResults()
	if err != nil {
		return nil, err
	}
	rr, ok := r.(*pgconn.ResultReader)
	if !ok {
		return nil, fmt.Errorf("admission pipeline: expected a statement result, got %T", r)
	}
	return rr, nil
}

// query runs sd (Flush) and scans each row with scan.
func (t *admissionTx) query(ctx context.Context, sd *pgconn.StatementDescription, args []any, scan func(pgx.Rows) error) error {
	if err := t.send(ctx, sd, args, false); err != nil {
		return err
	}
	rr, err := t.result()
	if err != nil {
		return err
	}
	rows := pgx.RowsFromResultReader(t.conn.TypeMap(), rr)
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	rows.Close()
	return rows.Err()
}

// end sends the Sync that ends the implicit transaction (a failed one rolls back) and closes
// the pipeline. A connection the pipeline cannot bring back to idle is closed, and the pool
// drops it.
func (t *admissionTx) end() error {
	if t.pipe == nil || t.ended {
		return nil
	}
	t.ended = true
	err := t.pipe.Sync()
	if cerr := t.pipe.Close(); err == nil {
		err = cerr
	}
	return err
}
