package admissionstore

// Why this file: the insert is the admission's last statement and travels with the Sync that
// commits it, so storing a delivery costs no round trip of its own; on remembered routes the
// same write carries the NOWAIT locks and the route-epoch guard that make the guess safe.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Insert stores rows with one statement sent with the Sync that commits the transaction;
// stored[i] is false when uq_provider_event_delivery already held the row's (workspace,
// provider, delivery key). When it fails, nothing is committed.
func (t *admissionTx) Insert(ctx context.Context, rows []ports.NewRow) ([]bool, error) {
	switch len(rows) {
	case 0:
		return nil, nil
	case 1:
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
	type key struct {
		workspaceID           int64
		provider, deliveryKey string
	}
	inserted := map[key]bool{}
	args := []any{workspaceIDs, connectionIDs, providers, eventTypes, deliveryKeys, scopeKeys, subjects,
		headers, dueAts, receivedAts, payloadIndex, payloads}
	err := t.insertAndCommit(ctx, "insert deliveries",
		func(epoch *int64, failOnMismatch bool) error {
			return t.send(ctx, t.stmt.insertMany, append(args, epoch, failOnMismatch), true)
		},
		func(rr *pgconn.ResultReader) (int, error) {
			result := pgx.RowsFromResultReader(t.conn.TypeMap(), rr)
			defer result.Close()
			for result.Next() {
				var k key
				if err := result.Scan(&k.workspaceID, &k.provider, &k.deliveryKey); err != nil {
					return 0, err
				}
				inserted[k] = true
			}
			result.Close()
			return len(inserted), result.Err()
		})
	if err != nil {
		return nil, err
	}
	stored := make([]bool, n)
	for i := range rows {
		k := key{workspaceIDs[i], providers[i], deliveryKeys[i]}
		stored[i] = inserted[k]
		delete(inserted, k) // a second row with the same key in one call was the duplicate
	}
	return stored, nil
}

// insertOne is Insert of a single row (one workspace, or an installation row), the common
// case, with insertDelivery: the command tag says whether the row was stored. Its parameters
// are encoded by rowParams rather than pgx's type map (see rowParams).
func (t *admissionTx) insertOne(ctx context.Context, r ports.NewRow) ([]bool, error) {
	var stored bool
	err := t.insertAndCommit(ctx, "insert delivery",
		func(epoch *int64, failOnMismatch bool) error {
			t.row.encode(r, epoch, failOnMismatch)
			t.queueEncoded(ctx, t.stmt.insertOne, t.row.values[:], nil, nil)
			return t.pipe.Sync()
		},
		func(rr *pgconn.ResultReader) (int, error) {
			tag, err := rr.Close()
			stored = tag.RowsAffected() == 1 // 0: uq_provider_event_delivery already held the row
			return int(tag.RowsAffected()), err
		})
	if err != nil {
		return nil, err
	}
	return []bool{stored}, nil
}

// insertAndCommit sends the insert (send queues it with its epoch guard) and the Sync that commits
// the transaction in one round trip, reads the insert's result with read (which counts the
// rows stored), and reports an error unless both the insert and the commit succeeded. Either
// way the transaction has ended when it returns.
//
// On routes read in this transaction the guard is the epoch of the routes statement's
// snapshot, and a mismatch fails the insert: insertAndCommit then reports errRoutesMoved, and
// Admit runs fn again on routes read anew (a change committed while the routes statement
// waited for a lock, or between the two statements). On remembered routes it sends, in the
// same write, lockRemembered before the insert, and the remembered route epoch as the guard,
// and reports errRecallMissed unless a row was stored: a lock that was held fails
// lockRemembered (the server then skips the insert and rolls back at the Sync), and a moved
// epoch makes the insert store nothing. A duplicate stores nothing either; the fresh run that
// follows tells it apart.
func (t *admissionTx) insertAndCommit(ctx context.Context, op string,
	send func(epoch *int64, failOnMismatch bool) error, read func(*pgconn.ResultReader) (int, error),
) error {
	var err error
	epoch, failOnMismatch := t.readEpoch, true // the guard: NULL admits
	if t.recalled != nil {
		ids := make([]int64, len(t.recalled.routes))
		for i, r := range t.recalled.routes {
			ids[i] = r.ConnectionID
		}
		err = t.queue(ctx, t.stmt.lockRemembered, []any{ids})
		epoch, failOnMismatch = &t.recalled.epoch, false
	}
	if err == nil {
		err = send(epoch, failOnMismatch) // the insert and the Sync
	}
	stored := 0
	if err == nil && t.recalled != nil {
		var rr *pgconn.ResultReader
		if rr, err = t.result(); err == nil {
			_, err = rr.Close() // the locks: taken, or the error that skipped the insert
		}
	}
	if err == nil {
		var rr *pgconn.ResultReader
		if rr, err = t.result(); err == nil {
			stored, err = read(rr)
		}
	}
	if err == nil {
		// The Sync's answer: ReadyForQuery once the commit succeeded, or the commit's error.
		_, err = t.pipe.GetResults()
	}
	if t.pipe != nil {
		if cerr := t.pipe.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	t.ended = true // the Sync ended the transaction, committed or not
	if t.recalled != nil {
		if err == nil && stored > 0 {
			t.confirmed = true
			return nil
		}
		return errRecallMissed
	}
	var pgErr *pgconn.PgError
	if t.readEpoch != nil && errors.As(err, &pgErr) && pgErr.Code == pgutil.SerializationFailure {
		t.routesMoved = true // route_epoch_moved: under READ COMMITTED nothing else raises it here
		return errRoutesMoved
	}
	if err != nil {
		return pgutil.Interpret(op, err)
	}
	return nil
}

// errRoutesMoved ends a transaction on routes read in it whose insert found the route epoch
// moved; Admit runs fn again on routes read anew.
var errRoutesMoved = errors.New("admissionstore: the routes changed after they were read")

// errRecallMissed ends a transaction on remembered routes that stored nothing; Admit runs fn
// again on routes read from the database.
var errRecallMissed = errors.New("admissionstore: the remembered routes were not confirmed")
