package admissionstore

// Why this file: the insert is the admission's last statement and travels with the Sync that
// commits it, so storing a delivery costs no round trip of its own; on remembered routes it
// joins a group transaction (groupcommit.go), whose write carries the NOWAIT locks and the
// route-epoch guards that make the guess safe.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Insert stores rows with one statement sent with the Sync that commits the transaction;
// stored[i] is false when uq_provider_event_delivery already held the row's (workspace,
// provider, delivery key). When it fails, nothing is committed. On recalled routes the rows
// go to a group transaction, which answers errRecallMissed unless it stored one of them.
func (t *admissionTx) Insert(ctx context.Context, rows []ports.NewRow) ([]bool, error) {
	switch {
	case len(rows) == 0:
		return nil, nil
	case t.recalled != nil && len(rows) <= maxGroupRows:
		t.ended = true
		stored, err := t.group.insert(ctx, rows, t.recalled)
		t.confirmed = err == nil
		return stored, err
	case t.recalled != nil:
		return nil, errRecallMissed // more rows than a group holds: read the routes, store alone
	}
	if err := t.connect(ctx); err != nil { // an insert without routes
		return nil, err
	}
	if len(rows) == 1 {
		return t.insertOne(ctx, rows[0])
	}
	n := len(rows)
	var (
		workspaceIDs  = make([]int64, n)
		connectionIDs = make([]int64, n)
		providers     = make([]string, n)
		eventTypes    = make([]string, n)
		deliveryKeys  = make([]string, n)
		scopeKeys     = make([]string, n)
		subjects      = make([]string, n)
		headers       = make([]string, n)
		dueAts        = make([]time.Time, n)
		receivedAts   = make([]time.Time, n)
		payloadIndex  = make([]int32, n)
		payloads      []string
		distinct      []json.RawMessage
	)
	for i, r := range rows {
		d := r.Delivery
		workspaceIDs[i], connectionIDs[i] = d.WorkspaceID(), r.ConnectionID
		providers[i], eventTypes[i], deliveryKeys[i] = d.Provider().String(), d.EventType(), d.DeliveryKey()
		scopeKeys[i], subjects[i] = d.Scope().String(), d.Subject().String()
		dueAts[i], receivedAts[i] = d.DueAt(), d.ReceivedAt()
		headers[i] = string(headersJSON(r.Headers))
		// The rows of one delivery share its payload: it is sent once, not once per workspace.
		j := slices.IndexFunc(distinct, func(p json.RawMessage) bool { return bytes.Equal(p, r.Payload) })
		if j < 0 {
			distinct = append(distinct, r.Payload)
			payloads = append(payloads, string(r.Payload))
			j = len(distinct) - 1
		}
		payloadIndex[i] = int32(j + 1) // SQL arrays count from 1
	}
	inserted := insertedKeys{}
	args := []any{workspaceIDs, connectionIDs, providers, eventTypes, deliveryKeys, scopeKeys, subjects,
		headers, dueAts, receivedAts, payloadIndex, payloads}
	var traceParent *string // the rows of one delivery share its request's traceparent
	if tp := rows[0].TraceParent; tp != "" {
		traceParent = &tp
	}
	err := t.insertAndCommit(ctx, "insert deliveries",
		func() error {
			return t.send(ctx, t.stmt.insertMany, append(args, t.readEpoch, true, traceParent), true)
		},
		func(rr *pgconn.ResultReader) error { return inserted.read(t.conn.TypeMap(), rr) })
	if err != nil {
		return nil, err
	}
	stored := make([]bool, n)
	for i := range rows {
		stored[i] = inserted.take(workspaceIDs[i], providers[i], deliveryKeys[i])
	}
	return stored, nil
}

// insertOne is Insert of a single row (one workspace, or an installation row), the common
// case, with insertDelivery: the command tag says whether the row was stored. Its parameters
// are encoded by rowParams rather than pgx's type map (see rowParams).
func (t *admissionTx) insertOne(ctx context.Context, r ports.NewRow) ([]bool, error) {
	var stored bool
	err := t.insertAndCommit(ctx, "insert delivery",
		func() error {
			t.row.encode(r, t.readEpoch, true)
			t.queueEncoded(ctx, t.stmt.insertOne, t.row.values[:], nil, nil)
			return t.pipe.Sync()
		},
		func(rr *pgconn.ResultReader) error {
			tag, err := rr.Close()
			stored = tag.RowsAffected() == 1 // 0: uq_provider_event_delivery already held the row
			return err
		})
	if err != nil {
		return nil, err
	}
	return []bool{stored}, nil
}

// insertAndCommit sends the insert (send queues it with the epoch guard of t.readEpoch, whose
// mismatch fails it) and the Sync that commits the transaction in one round trip, reads the
// insert's result with read, and reports an error unless both the insert and the commit succeeded. Either
// way the transaction has ended when it returns.
//
// The guard is the epoch of the routes statement's snapshot, and a mismatch fails the insert:
// insertAndCommit then reports errRoutesMoved, and Admit runs fn again on routes read anew (a
// change committed while the routes statement waited for a lock, or between the two
// statements).
func (t *admissionTx) insertAndCommit(ctx context.Context, op string,
	send func() error, read func(*pgconn.ResultReader) error,
) error {
	err := send() // the insert and the Sync; a NULL epoch admits
	if err == nil {
		var rr *pgconn.ResultReader
		if rr, err = t.result(); err == nil {
			err = read(rr)
		}
	}
	if err == nil {
		// The Sync's answer: ReadyForQuery once the commit succeeded, or the commit's error.
		_, err = t.pipe.GetResults()
	}
	if t.pipe != nil {
		err = t.close(err)
	}
	t.ended = true // the Sync ended the transaction, committed or not
	var pgErr *pgconn.PgError
	if t.readEpoch != nil && errors.As(err, &pgErr) && pgErr.Code == sqlkit.SerializationFailure {
		t.routesMoved = true // route_epoch_moved: under READ COMMITTED nothing else raises it here
		return errRoutesMoved
	}
	if err != nil {
		return sqlkit.Interpret(op, err)
	}
	return nil
}

// errRoutesMoved ends a transaction on routes read in it whose insert found the route epoch
// moved; Admit runs fn again on routes read anew.
var errRoutesMoved = errors.New("admissionstore: the routes changed after they were read")

// errRecallMissed ends a run on remembered routes that stored nothing; Admit runs fn again on
// routes read from the database.
var errRecallMissed = errors.New("admissionstore: the remembered routes were not confirmed")

// insertedKeys are the (workspace, provider, delivery key) of the rows an insert's RETURNING
// named: the rows it stored.
type insertedKeys map[insertedKey]bool

type insertedKey struct {
	workspaceID           int64
	provider, deliveryKey string
}

// read adds the keys of the rows in rr, an insert's RETURNING coalesce(workspace_id, 0),
// provider, delivery_key.
func (k insertedKeys) read(m *pgtype.Map, rr *pgconn.ResultReader) error {
	result := pgx.RowsFromResultReader(m, rr)
	defer result.Close()
	for result.Next() {
		var key insertedKey
		if err := result.Scan(&key.workspaceID, &key.provider, &key.deliveryKey); err != nil {
			return err
		}
		k[key] = true
	}
	result.Close()
	return result.Err()
}

// take reports whether the insert stored a row with this key, and forgets it: of two rows
// with one key in one insert, the later was the duplicate.
func (k insertedKeys) take(workspaceID int64, provider, deliveryKey string) bool {
	key := insertedKey{workspaceID, provider, deliveryKey}
	stored := k[key]
	delete(k, key)
	return stored
}
