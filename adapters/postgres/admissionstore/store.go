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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store runs admission transactions on a pool of its own (see Configure).
type Store struct {
	pool   *pgxpool.Pool
	slots  chan struct{} // one token per admission transaction that may run at once
	routes routeMemory

	confirmed, missed atomic.Uint64 // admissions on remembered routes that stored, or ran again
}

// Recalls reports how many admissions stored rows on remembered routes in one round trip
// (confirmed), and how many found them not current and ran again on routes read from the
// database (missed).
func (s *Store) Recalls() (confirmed, missed uint64) { return s.confirmed.Load(), s.missed.Load() }

var (
	_ ports.AdmissionStore = (*Store)(nil)
	_ ports.AdmissionTx    = (*admissionTx)(nil)
)

// The session settings every admission connection starts with (see Configure).
const (
	isolationParam = "default_transaction_isolation"
	isolation      = "read committed"
	planCacheParam = "plan_cache_mode"
	planCache      = "force_generic_plan"
	// lockTimeoutParam ends a wait for a lifecycle lock (a workspace deletion or a suspension
	// holding a connection row): the statement fails with 55P03, which is contention
	// (pgutil.Interpret), so the delivery is answered 503 retry and the provider delivers it
	// again, instead of every provider's admission stalling behind one long transaction.
	lockTimeoutParam = "lock_timeout"
)

// DefaultLockTimeout is HEPHAESTUS_ADMISSION_LOCK_TIMEOUT's default.
const DefaultLockTimeout = 2 * time.Second

// SetLockTimeout sets the longest an admission statement waits for a row lock on a pool that
// Configure prepared (a startup parameter: no statement per delivery). d is rounded up to a
// millisecond; it must be positive.
func SetLockTimeout(cfg *pgxpool.Config, d time.Duration) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	cfg.ConnConfig.RuntimeParams[lockTimeoutParam] = strconv.FormatInt(int64(max(ms, 1)), 10)
}

// Configure prepares cfg for a pool that serves admission alone, and Size is its MaxConns.
//
// An admission transaction opens no transaction block: its statements run in one pipeline
// until a Sync (see Admit), so PostgreSQL runs them as one implicit transaction with the
// session's default isolation, which Configure pins to READ COMMITTED whatever the server,
// database or role default. The lifecycle lock needs it: each statement sees what committed
// before it, and a row lock that waited returns the row as its updater committed it, so a
// suspension or reconfiguration that admission waited for is seen, not hidden by an older
// snapshot (and REPEATABLE READ would fail the wait instead).
//
// Configure also keeps the pool's statements on their generic plans. Admission's statements
// are index lookups whose generic plan is right for every delivery, but PostgreSQL re-plans a
// prepared statement on every execution while custom plans look cheaper, and for the routes
// statement they do whenever the planner can fold a parameter (a provider that routes only
// through its sources, or a table whose statistics favour it): that planning costs more than
// the statement. Both are startup parameters, so they cost no statement per delivery, which
// is why admission has a pool of its own rather than settings on a shared one. Its sessions
// also wait at most DefaultLockTimeout for a row lock unless SetLockTimeout chose another.
func Configure(cfg *pgxpool.Config) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams[isolationParam] = isolation
	cfg.ConnConfig.RuntimeParams[planCacheParam] = planCache
	if cfg.ConnConfig.RuntimeParams[lockTimeoutParam] == "" {
		SetLockTimeout(cfg, DefaultLockTimeout)
	}
	cfg.MaxConns = Size()
	cfg.MinConns = 0
}

// OpenPool opens a pool on connString prepared by Configure.
func OpenPool(ctx context.Context, connString string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	Configure(cfg)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// New builds the store on pool, which Configure must have prepared. At most Size()
// admission transactions run at once; further deliveries wait for a slot within their
// request's context.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("admissionstore: a pool is required")
	}
	params := pool.Config().ConnConfig.RuntimeParams
	if params[isolationParam] != isolation || params[planCacheParam] != planCache {
		return nil, errors.New("admissionstore: the pool was not prepared with admissionstore.Configure " +
			"(its connections must default to READ COMMITTED and generic plans)")
	}
	n := int(Size())
	if m := int(pool.Config().MaxConns); m > 0 && m < n {
		n = m
	}
	return &Store{pool: pool, slots: make(chan struct{}, n), routes: routeMemory{entries: map[string]remembered{}}}, nil
}

// Size is how many admission transactions run at once, and the admission pool's size: four
// per CPU the process may use.
//
// Every admission of a connection holds that connection row FOR SHARE until its insert has
// committed, so concurrent admissions share the row through a MultiXact that each new locker
// rebuilds with every current one; the database's work per delivery grows with the number of
// transactions in flight, and past a few per core more of them only queue inside PostgreSQL,
// where waiting costs CPU that queueing here does not. On the benchmark's two cores, eight
// transactions in flight took a fifth less database CPU per delivery than thirty-two, at the
// same or better throughput and a lower p99.
func Size() int32 { return int32(4 * runtime.GOMAXPROCS(0)) }

// Admit runs fn in one READ COMMITTED transaction on one pooled connection.
//
// Admission sits on every webhook's response path, so the transaction is a pipeline of
// prepared statements with no BEGIN or COMMIT of its own: PostgreSQL runs everything sent
// before a Sync as one implicit transaction and commits it at the Sync. The routes statement
// goes out with a Flush (the server runs it and answers, the transaction stays open), and the
// insert goes out with the Sync that commits it (Insert is the admission's last statement, see
// ports.AdmissionTx): two round trips and three statements fewer than BEGIN … COMMIT. When fn
// fails or inserts nothing, Admit sends the Sync itself: it rolls back a failed transaction
// and ends one that only read and locked (nothing to undo).
//
// Most deliveries take one round trip: Routes answers from the routes this store remembers
// for the same route (see routeMemory), and Insert sends the NOWAIT locks of their connections
// and an insert guarded by the route epoch, with the Sync, in one write. That transaction
// stores rows only when it got every lock at once and no connection or subscription changed
// since the routes were read, i.e. exactly when reading the routes again would have answered
// the same without waiting. Every other outcome of a remembered route (a lock was held, the
// epoch moved, a refusal or drop decided on remembered routes, a duplicate, an error) is
// discarded, and fn runs again in a new transaction on routes read from the database, which
// decides. fn must therefore leave its results to be read after Admit returns.
//
// Admit first waits for one of the slots, within ctx. Errors: fn's error; a database failure
// translated by pgutil (*inbox.TransientError, …).
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
	defer c.Release()
	t := &admissionTx{conn: c.Conn(), memory: &s.routes, mayRecall: true}
	if err := t.prepare(ctx); err != nil {
		return pgutil.Interpret("prepare admission statements", err)
	}
	err = t.run(ctx, fn)
	if t.recalled == nil {
		return err
	}
	if t.confirmed {
		s.confirmed.Add(1)
		return err
	}
	s.missed.Add(1)
	fresh := &admissionTx{conn: c.Conn(), stmt: t.stmt, memory: &s.routes}
	return fresh.run(ctx, fn)
}

// run runs fn in t and ends whatever fn left open.
func (t *admissionTx) run(ctx context.Context, fn func(ctx context.Context, tx ports.AdmissionTx) error) error {
	defer func() {
		if p := recover(); p != nil {
			t.end()
			panic(p)
		}
	}()
	err := fn(ctx, t)
	if t.pipe == nil || t.ended {
		return err // nothing begun, or Insert's Sync ended it
	}
	if endErr := t.end(); err == nil && endErr != nil {
		// fn succeeded without inserting: its reads and locks end here; a failure to end them
		// is the database's, and what fn decided was not stored.
		return pgutil.Interpret("end transaction", endErr)
	}
	return err
}

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
	pipe  *pgconn.Pipeline // nil until the first statement
	ended bool             // a Sync ended the transaction (Insert's, or end's)
	held  map[int64]ports.LockedConnection

	memory    *routeMemory
	mayRecall bool        // Routes may answer from memory
	recalled  *remembered // what Routes answered from memory
	confirmed bool        // Insert stored rows on the recalled routes
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
		{&t.stmt.insertOne, "hx_admission_insert_one", insertDelivery},
		{&t.stmt.insertMany, "hx_admission_insert_many", insertDeliveries},
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
	if t.pipe == nil {
		t.pipe = t.conn.PgConn().StartPipeline(ctx)
	}
	t.pipe.SendQueryStatement(sd, t.args.ParamValues, t.args.ParamFormats, t.args.ResultFormats)
	return nil
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

// Routes reads the source and recipient connections of spec and, in the same statement, takes
// every candidate's lifecycle lock in connection-id order (see routes). Each Route carries the
// state and config_version of the statement's snapshot, i.e. before any wait for a lock;
// LockConnections answers the values read under the lock.
func (t *admissionTx) Routes(ctx context.Context, spec ports.RouteSpec, provider string, sourceConnectionID int64) ([]ports.Route, error) {
	key := routeKey(spec, provider, sourceConnectionID)
	if t.mayRecall {
		t.mayRecall = false
		if r, ok := t.memory.recall(key); ok {
			t.recalled = &r
			t.held = make(map[int64]ports.LockedConnection, len(r.routes))
			for _, route := range r.routes {
				t.held[route.ConnectionID] = ports.LockedConnection{ConnectionID: route.ConnectionID, Exists: true,
					State: route.State, ConfigVersion: route.ConfigVersion}
			}
			return slices.Clone(r.routes), nil
		}
	}
	types := make([]string, len(spec.Resources))
	ids := make([]string, len(spec.Resources))
	for i, r := range spec.Resources {
		types[i], ids[i] = r.Type, r.ID
	}
	args := []any{provider, types, ids, spec.RecipientsAnyConnection, spec.ConnectionWide}
	sd := t.stmt.routesByKey
	if sourceConnectionID > 0 {
		sd, args = t.stmt.routesByID, append(args, sourceConnectionID)
	} else {
		args = append(args, spec.SourceKind, spec.SourceKey)
	}
	var (
		routes    []ports.Route
		epoch     int64
		unchanged = true // no candidate changed while the statement waited for its lock
	)
	t.held = map[int64]ports.LockedConnection{}
	err := t.query(ctx, sd, args, func(rows pgx.Rows) error {
		var r ports.Route
		var state, lockedState string
		var lockedVersion int64
		var exists bool
		if err := rows.Scan(&r.ConnectionID, &r.WorkspaceID, &r.Kind, &state, &r.ConfigVersion,
			&r.SourceServerURL, &r.Source, &r.Recipient, &exists, &lockedState, &lockedVersion, &epoch); err != nil {
			return err
		}
		var err error
		if r.State, err = connection.ParseState(state); err != nil {
			return fmt.Errorf("connection %d: %w", r.ConnectionID, err)
		}
		locked := ports.LockedConnection{ConnectionID: r.ConnectionID, Exists: exists}
		if exists {
			locked.ConfigVersion = lockedVersion
			if locked.State, err = connection.ParseState(lockedState); err != nil {
				return fmt.Errorf("connection %d: %w", r.ConnectionID, err)
			}
		}
		unchanged = unchanged && exists && locked.State == r.State && locked.ConfigVersion == r.ConfigVersion
		t.held[r.ConnectionID] = locked
		routes = append(routes, r)
		return nil
	})
	if err != nil {
		return nil, pgutil.Interpret("read routes", err)
	}
	if unchanged && len(routes) > 0 {
		// What the snapshot read is what the locks hold, as of the epoch of the same snapshot.
		t.memory.remember(key, remembered{routes: slices.Clone(routes), epoch: epoch})
	} else {
		t.memory.forget(key)
	}
	return routes, nil
}

// LockConnections answers from the locks Routes took when it holds all of ids; otherwise it
// takes them with lockConnections (ids in any order: the statement sorts them).
func (t *admissionTx) LockConnections(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	out := make([]ports.LockedConnection, 0, len(ids))
	for _, id := range ids {
		l, ok := t.held[id]
		if !ok {
			if t.recalled != nil {
				return nil, errRecallMissed // remembered routes lack it: read them
			}
			return t.lock(ctx, ids)
		}
		out = append(out, l)
	}
	return out, nil
}

func (t *admissionTx) lock(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	found := map[int64]ports.LockedConnection{}
	err := t.query(ctx, t.stmt.lock, []any{ids}, func(rows pgx.Rows) error {
		l := ports.LockedConnection{Exists: true}
		var state string
		if err := rows.Scan(&l.ConnectionID, &state, &l.ConfigVersion); err != nil {
			return err
		}
		var err error
		if l.State, err = connection.ParseState(state); err != nil {
			return fmt.Errorf("connection %d: %w", l.ConnectionID, err)
		}
		found[l.ConnectionID] = l
		return nil
	})
	if err != nil {
		return nil, pgutil.Interpret("lock connections", err)
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
	err := t.insertAndCommit(ctx, "insert deliveries", t.stmt.insertMany, []any{workspaceIDs,
		connectionIDs, providers, eventTypes, deliveryKeys, scopeKeys, subjects, headers, dueAts, receivedAts,
		payloadIndex, payloads},
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
// case, with insertDelivery: the command tag says whether the row was stored.
func (t *admissionTx) insertOne(ctx context.Context, r ports.NewRow) ([]bool, error) {
	d := r.Delivery
	var stored bool
	err := t.insertAndCommit(ctx, "insert delivery", t.stmt.insertOne, []any{d.WorkspaceID(),
		r.ConnectionID, d.Provider().String(), d.EventType(), d.DeliveryKey(), d.Scope().String(), d.Subject().String(),
		r.Payload, string(headersJSON(r.Headers)), d.DueAt(), d.ReceivedAt()},
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

// insertAndCommit sends the insert sd with args, its epoch guard, and the Sync that commits
// the transaction in one round trip, reads the insert's result with read (which counts the
// rows stored), and reports an error unless both the insert and the commit succeeded. Either
// way the transaction has ended when it returns.
//
// On routes read in this transaction the guard is NULL. On remembered routes it sends, in the
// same write, lockRemembered before the insert, and the remembered route epoch as the guard,
// and reports errRecallMissed unless a row was stored: a lock that was held fails
// lockRemembered (the server then skips the insert and rolls back at the Sync), and a moved
// epoch makes the insert store nothing. A duplicate stores nothing either; the fresh run that
// follows tells it apart.
func (t *admissionTx) insertAndCommit(ctx context.Context, op string, sd *pgconn.StatementDescription,
	args []any, read func(*pgconn.ResultReader) (int, error),
) error {
	var err error
	var epoch *int64 // the guard: NULL admits
	if t.recalled != nil {
		ids := make([]int64, len(t.recalled.routes))
		for i, r := range t.recalled.routes {
			ids[i] = r.ConnectionID
		}
		err = t.queue(ctx, t.stmt.lockRemembered, []any{ids})
		epoch = &t.recalled.epoch
	}
	args = append(args, epoch)
	if err == nil {
		err = t.send(ctx, sd, args, true)
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
	if err != nil {
		return pgutil.Interpret(op, err)
	}
	return nil
}

// errRecallMissed ends a transaction on remembered routes that stored nothing; Admit runs fn
// again on routes read from the database.
var errRecallMissed = errors.New("admissionstore: the remembered routes were not confirmed")

// routeMemorySize bounds the routes a store remembers: a route is a source and its resources
// (for GitHub an installation and a repository), so a server that hears from more of them
// than this reads the routes of some deliveries again.
const routeMemorySize = 4096

// routeMemory remembers, per route, the routes the database last answered with the route
// epoch of the same snapshot, for transactions that recall them (see Admit). It is only ever a
// guess: an insert on remembered routes is guarded by the epoch and the locks.
type routeMemory struct {
	mu      sync.Mutex
	entries map[string]remembered
}

type remembered struct {
	routes []ports.Route
	epoch  int64
}

func (m *routeMemory) recall(key string) (remembered, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.entries[key]
	return r, ok
}

func (m *routeMemory) remember(key string, r remembered) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[key]; !ok && len(m.entries) >= routeMemorySize {
		for k := range m.entries { // an arbitrary entry makes room
			delete(m.entries, k)
			break
		}
	}
	m.entries[key] = r
}

func (m *routeMemory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
}

// routeKey names what the routes statement reads routes by: every argument, each field
// length-prefixed so that no two routes share a key.
func routeKey(spec ports.RouteSpec, provider string, sourceConnectionID int64) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	field(provider)
	field(strconv.FormatInt(sourceConnectionID, 10))
	field(spec.SourceKind)
	field(spec.SourceKey)
	field(strconv.FormatBool(spec.ConnectionWide))
	field(strconv.FormatBool(spec.RecipientsAnyConnection))
	for _, r := range spec.Resources {
		field(r.Type)
		field(r.ID)
	}
	return b.String()
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
