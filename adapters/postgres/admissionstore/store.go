// Package admissionstore is the PostgreSQL side of webhook admission: one READ COMMITTED
// transaction that reads a delivery's routes (ProviderEventSubscriptions), takes the
// connections' lifecycle locks and inserts the inbox rows.
package admissionstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store runs admission transactions on a pool.
type Store struct {
	pool  *pgxpool.Pool
	slots chan struct{} // one token per admission transaction that may run at once
}

var (
	_ ports.AdmissionStore = (*Store)(nil)
	_ ports.AdmissionTx    = (*admissionTx)(nil)
)

// New builds the store on pool. At most MaxConcurrent(pool) admission transactions run at
// once; further deliveries wait for a slot within their request's context.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("admissionstore: a pool is required")
	}
	return &Store{pool: pool, slots: make(chan struct{}, MaxConcurrent(pool))}, nil
}

// MaxConcurrent is how many admission transactions run at once: four per CPU the process may
// use, and never more than the pool holds (the claimers share it).
//
// Every admission of a connection holds that connection row FOR SHARE until its insert has
// committed, so concurrent admissions share the row through a MultiXact that each new locker
// rebuilds with every current one; the database's work per delivery grows with the number of
// transactions in flight, and past a few per core more of them only queue inside PostgreSQL,
// where waiting costs CPU that queueing here does not. On the benchmark's two cores, eight
// transactions in flight took a fifth less database CPU per delivery than thirty-two, at the
// same or better throughput and a lower p99.
func MaxConcurrent(pool *pgxpool.Pool) int {
	n := 4 * runtime.GOMAXPROCS(0)
	if m := int(pool.Config().MaxConns); m > 0 && m < n {
		n = m
	}
	return n
}

// Admit runs fn in one READ COMMITTED transaction on one pooled connection.
//
// READ COMMITTED is what the lifecycle lock needs: each statement sees what committed before
// it, and a row lock that waited returns the row as its updater committed it, so a suspension
// or reconfiguration that admission waited for is seen, not hidden by an older snapshot.
//
// Admission sits on every webhook's response path, so the transaction costs two round trips:
// BEGIN travels in one pipeline with the routes statement, and COMMIT in one pipeline with the
// insert (Insert is the admission's last statement, see ports.AdmissionTx). It first waits for
// one of MaxConcurrent slots, within ctx. Whatever fn leaves
// open is committed when fn returns nil and rolled back otherwise; the rollback runs on a
// context that survives cancellation, so a cancelled request still releases its locks at once.
// Errors: fn's error; a database failure translated by pgutil (*inbox.TransientError, …).
func (s *Store) Admit(ctx context.Context, fn func(ctx context.Context, tx ports.AdmissionTx) error) error {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return pgutil.Interpret("acquire connection", ctx.Err())
	}
	defer func() { <-s.slots }()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgutil.Interpret("acquire connection", err)
	}
	defer c.Release() // a connection still inside a transaction is destroyed, not pooled
	t := &admissionTx{conn: c.Conn()}
	defer func() {
		if p := recover(); p != nil {
			t.rollback(ctx)
			panic(p)
		}
	}()
	return t.finish(ctx, fn(ctx, t))
}

// admissionTx is one admission transaction. held remembers the connections whose lifecycle
// lock Routes already took, so LockConnections costs no second round trip.
type admissionTx struct {
	conn *pgx.Conn
	held map[int64]ports.LockedConnection
}

// beginTx opens the transaction in the same pipeline as the first statement, and genericPlans
// keeps the transaction's statements on their cached generic plans. Admission's statements are
// index lookups whose generic plan is right for every delivery, but PostgreSQL re-plans a
// prepared statement on every execution when custom plans look cheaper, and for the routes
// statement they do whenever the planner can fold a parameter (a provider that routes only
// through its sources, or a table whose statistics favour it): that planning costs more than
// the statement. SET LOCAL ends with the transaction, so the pooled connection is unchanged.
const (
	beginTx      = `BEGIN ISOLATION LEVEL READ COMMITTED`
	genericPlans = `SET LOCAL plan_cache_mode = force_generic_plan`
)

// open reports whether a transaction is open (or failed and not yet rolled back).
func (t *admissionTx) open() bool { return t.conn.PgConn().TxStatus() != 'I' }

// send sends the statements queue adds in one round trip, preceded by BEGIN (and
// genericPlans) when no transaction is open yet, and consumes their results. The caller reads
// the rest and closes the results.
func (t *admissionTx) send(ctx context.Context, queue func(b *pgx.Batch)) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := !t.open()
	if begin {
		b.Queue(beginTx)
		b.Queue(genericPlans)
	}
	queue(b)
	br := t.conn.SendBatch(ctx, b)
	if begin {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return nil, err
			}
		}
	}
	return br, nil
}

// readAll runs read on the first statement's results, closes the batch and translates errors.
func readAll(op string, br pgx.BatchResults, err error, read func(br pgx.BatchResults) error) error {
	if err != nil {
		return pgutil.Interpret(op, err)
	}
	err = read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pgutil.Interpret(op, err)
	}
	return nil
}

// finish ends what fn left open: COMMIT when fn succeeded, ROLLBACK otherwise.
func (t *admissionTx) finish(ctx context.Context, err error) error {
	switch {
	case !t.open():
		return err // nothing begun, or Insert already committed
	case err != nil:
		t.rollback(ctx)
		return err
	case t.conn.PgConn().TxStatus() == 'E':
		t.rollback(ctx)
		return errors.New("admission transaction failed without an error")
	}
	if _, err := t.conn.Exec(ctx, "COMMIT"); err != nil {
		t.rollback(ctx)
		return pgutil.Interpret("commit", err)
	}
	return nil
}

func (t *admissionTx) rollback(ctx context.Context) {
	if t.open() && !t.conn.IsClosed() {
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
}

// Routes reads the source and recipient connections of spec and, in the same statement, takes
// every candidate's lifecycle lock in connection-id order (see routesTail). Each Route carries
// the state and config_version of the statement's snapshot, i.e. before any wait for a lock;
// LockConnections answers the values read under the lock.
func (t *admissionTx) Routes(ctx context.Context, spec ports.RouteSpec, provider string, sourceConnectionID int64) ([]ports.Route, error) {
	types := make([]string, len(spec.Resources))
	ids := make([]string, len(spec.Resources))
	for i, r := range spec.Resources {
		types[i], ids[i] = r.Type, r.ID
	}
	args := []any{provider, types, ids, spec.RecipientsAnyConnection, spec.ConnectionWide}
	query := routesBySourceKey
	if sourceConnectionID > 0 {
		query, args = routesBySourceID, append(args, sourceConnectionID)
	} else {
		args = append(args, spec.SourceKind, spec.SourceKey)
	}
	br, err := t.send(ctx, func(b *pgx.Batch) { b.Queue(query, args...) })
	var routes []ports.Route
	err = readAll("read routes", br, err, func(br pgx.BatchResults) (err error) {
		routes, err = t.readRoutes(br)
		return err
	})
	return routes, err
}

func (t *admissionTx) readRoutes(br pgx.BatchResults) ([]ports.Route, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var routes []ports.Route
	t.held = map[int64]ports.LockedConnection{}
	for rows.Next() {
		var r ports.Route
		var state, lockedState string
		var lockedVersion int64
		var exists bool
		if err := rows.Scan(&r.ConnectionID, &r.WorkspaceID, &r.Kind, &state, &r.ConfigVersion,
			&r.SourceServerURL, &r.Source, &r.Recipient, &exists, &lockedState, &lockedVersion); err != nil {
			return nil, err
		}
		if r.State, err = connection.ParseState(state); err != nil {
			return nil, fmt.Errorf("connection %d: %w", r.ConnectionID, err)
		}
		locked := ports.LockedConnection{ConnectionID: r.ConnectionID, Exists: exists}
		if exists {
			locked.ConfigVersion = lockedVersion
			if locked.State, err = connection.ParseState(lockedState); err != nil {
				return nil, fmt.Errorf("connection %d: %w", r.ConnectionID, err)
			}
		}
		t.held[r.ConnectionID] = locked
		routes = append(routes, r)
	}
	return routes, rows.Err()
}

// LockConnections answers from the locks Routes took when it holds all of ids; otherwise it
// takes them with lockConnections (ids in any order: the statement sorts them).
func (t *admissionTx) LockConnections(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	out := make([]ports.LockedConnection, 0, len(ids))
	for _, id := range ids {
		l, ok := t.held[id]
		if !ok {
			return t.lock(ctx, ids)
		}
		out = append(out, l)
	}
	return out, nil
}

func (t *admissionTx) lock(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	br, err := t.send(ctx, func(b *pgx.Batch) { b.Queue(lockConnections, ids) })
	found := map[int64]ports.LockedConnection{}
	err = readAll("lock connections", br, err, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l := ports.LockedConnection{Exists: true}
			var state string
			if err := rows.Scan(&l.ConnectionID, &state, &l.ConfigVersion); err != nil {
				return err
			}
			if l.State, err = connection.ParseState(state); err != nil {
				return fmt.Errorf("connection %d: %w", l.ConnectionID, err)
			}
			found[l.ConnectionID] = l
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	out := make([]ports.LockedConnection, len(ids))
	for i, id := range ids {
		l, ok := found[id]
		if !ok {
			l = ports.LockedConnection{ConnectionID: id} // deleted: Exists false
		}
		out[i] = l
	}
	return out, nil
}

// Insert stores rows with one statement and commits the transaction in the same round trip;
// stored[i] is false when uq_provider_event_delivery already held the row's (workspace,
// provider, delivery key). When it fails, nothing is committed and Admit rolls back.
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
	err := t.insertAndCommit(ctx, "insert deliveries", func(b *pgx.Batch) {
		b.Queue(insertDeliveries, workspaceIDs, connectionIDs, providers, eventTypes,
			deliveryKeys, scopeKeys, subjects, headers, dueAts, receivedAts, payloadIndex, payloads)
	}, func(br pgx.BatchResults) error {
		result, err := br.Query()
		if err != nil {
			return err
		}
		defer result.Close()
		for result.Next() {
			var k key
			if err := result.Scan(&k.workspaceID, &k.provider, &k.deliveryKey); err != nil {
				return err
			}
			inserted[k] = true
		}
		return result.Err()
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
// case, with insertDelivery: the command tag says whether the row was stored.
func (t *admissionTx) insertOne(ctx context.Context, r ports.NewRow) ([]bool, error) {
	d := r.Delivery
	var stored bool
	err := t.insertAndCommit(ctx, "insert delivery", func(b *pgx.Batch) {
		b.Queue(insertDelivery, d.WorkspaceID(), r.ConnectionID, d.Provider().String(), d.EventType(),
			d.DeliveryKey(), d.Scope().String(), d.Subject().String(), r.Payload, string(headersJSON(r.Headers)),
			d.DueAt(), d.ReceivedAt())
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		stored = tag.RowsAffected() == 1 // 0: uq_provider_event_delivery already held the row
		return err
	})
	if err != nil {
		return nil, err
	}
	return []bool{stored}, nil
}

// insertAndCommit sends the insert queue adds and COMMIT in one round trip, reads the insert's
// result with read, and reports an error unless both succeeded.
func (t *admissionTx) insertAndCommit(ctx context.Context, op string, queue func(b *pgx.Batch), read func(pgx.BatchResults) error) error {
	br, err := t.send(ctx, func(b *pgx.Batch) {
		queue(b)
		b.Queue("COMMIT")
	})
	err = readAll(op, br, err, func(br pgx.BatchResults) error {
		if err := read(br); err != nil {
			return err
		}
		// COMMIT after a failed statement would answer ROLLBACK; here the insert succeeded, so
		// an error is a failed commit (and the connection reports the transaction state).
		_, err := br.Exec()
		return err
	})
	if err != nil {
		return err
	}
	if t.open() {
		return errors.New(op + ": the commit did not end the transaction")
	}
	return nil
}

// headersJSON is the stored headers as a JSON object, keys in order. It writes what
// json.Marshal would store (jsonb keeps only the decoded strings): JSON escapes, and U+FFFD for
// bytes that are not UTF-8, without reflection on every delivery.
func headersJSON(h map[string]string) []byte {
	keys := make([]string, 0, len(h))
	size := 2
	for k, v := range h {
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, h[k])
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
