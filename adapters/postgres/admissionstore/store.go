// Package admissionstore is the PostgreSQL side of webhook admission: one READ COMMITTED
// transaction that reads a delivery's routes (ProviderEventSubscriptions), takes the
// connections' lifecycle locks and inserts the inbox rows, or, on remembered routes, a group
// transaction that does so for the deliveries that arrived together.
//
// The files follow the transaction's concerns, in the order a reader needs them:
//   - store.go: Store and Admit, the one entry point (slots, the pooled connection, the run
//     on remembered routes and the run again on routes read from the database);
//   - pool.go: the admission pool's session settings and size (why admission has a pool of
//     its own);
//   - pipeline.go: the hand-driven pipeline that makes one implicit transaction of the
//     statements (no BEGIN, no COMMIT);
//   - routes.go: the routes statement and the lifecycle locks;
//   - insert.go: the insert sent with the Sync that commits, and its epoch guard;
//   - params.go: the single-row insert's parameters, encoded by hand;
//   - routecache.go: the remembered routes that let most deliveries take one round trip;
//   - groupcommit.go: the group transactions that deliveries on remembered routes share;
//   - headers.go: the stored headers' JSON;
//   - queries.go: the SQL.
package admissionstore

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store runs admission transactions on a pool of its own (see Configure).
type Store struct {
	pool   *pgxpool.Pool
	slots  chan struct{} // one token per admission transaction on routes read that may run at once
	routes routeMemory
	group  groupCommit // the transactions of deliveries on remembered routes

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
	s := &Store{pool: pool, slots: make(chan struct{}, n), routes: routeMemory{entries: map[string]remembered{}}}
	s.group = groupCommit{acquire: s.acquire, limit: min(runtime.GOMAXPROCS(0), n)}
	return s, nil
}

// acquire is a pooled connection with the admission statements prepared, and its release.
func (s *Store) acquire(ctx context.Context) (*admissionTx, func(), error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, sqlkit.Interpret("acquire connection", err)
	}
	t := &admissionTx{conn: c.Conn(), memory: &s.routes}
	if err := t.prepare(ctx); err != nil {
		c.Release()
		return nil, nil, sqlkit.Interpret("prepare admission statements", err)
	}
	return t, c.Release, nil
}

// Admit runs fn in one READ COMMITTED transaction, which it may share with other deliveries.
//
// Admission sits on every webhook's response path, so a transaction is a pipeline of
// prepared statements with no BEGIN or COMMIT of its own: PostgreSQL runs everything sent
// before a Sync as one implicit transaction and commits it at the Sync. The routes statement
// goes out with a Flush (the server runs it and answers, the transaction stays open), and the
// insert goes out with the Sync that commits it (Insert is the admission's last statement, see
// ports.AdmissionTx): two round trips and three statements fewer than BEGIN … COMMIT. When fn
// fails or inserts nothing, Admit sends the Sync itself: it rolls back a failed transaction
// and ends one that only read and locked (nothing to undo).
//
// Most deliveries take one round trip, and share it: Routes answers from the routes this store
// remembers for the same route (see routeMemory), without a connection, and Insert hands the
// rows to a group transaction (see groupCommit), which sends the NOWAIT locks of its
// deliveries' connections and one insert of their rows, each guarded by its delivery's route
// epoch, with the Sync, in one write. A delivery's rows are stored there only when the group
// got every lock at once and no connection or subscription changed since its routes were
// read, i.e. exactly when reading the routes again would have answered the same without
// waiting. Every other outcome of a remembered route (a lock was held, the epoch moved, a
// refusal or drop decided on remembered routes, a duplicate, an error of the group) is
// discarded, and fn runs again in a transaction of its own on routes read from the database,
// which decides. fn must therefore leave its results to be read after Admit returns.
//
// On routes read from the database, the insert stores only while the route epoch is still
// that of the routes statement's snapshot. When a connection or subscription change committed
// in between (typically while the routes statement waited for a lifecycle lock), nothing is
// stored and fn runs again on routes read anew, up to routeReads transactions.
//
// A transaction on routes read first waits for one of the slots, within ctx. Errors: fn's
// error; a database failure translated by sqlkit (*inbox.TransientError, …).
func (s *Store) Admit(ctx context.Context, fn func(ctx context.Context, tx ports.AdmissionTx) error) error {
	ctx, span := telemetry.Tracer().Start(ctx, "admission.transaction", trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return s.admit(ctx, fn)
	}
	span.SetAttributes(telemetry.DBAttributes("INSERT", "provider_event")...)
	err := s.admit(ctx, fn)
	if err != nil {
		span.SetStatus(codes.Error, "admission transaction failed") // never the database's message
	}
	span.End()
	return err
}

// admit is Admit without its span.
func (s *Store) admit(ctx context.Context, fn func(ctx context.Context, tx ports.AdmissionTx) error) error {
	// The first run has no connection: Routes answers from memory when it can, and connects
	// (connect) when it cannot, the run then going on as a transaction on routes read.
	t := &admissionTx{memory: &s.routes, group: &s.group, store: s}
	defer t.disconnect()
	err := t.run(ctx, fn)
	reads := 0 // transactions on routes read from the database
	switch {
	case errors.Is(err, errGroupPanicked):
		s.missed.Add(1)
		return inbox.Transient("admit delivery in a group transaction", err) // 503 retry
	case t.recalled != nil && t.confirmed:
		s.confirmed.Add(1)
		return err
	case t.recalled != nil:
		s.missed.Add(1)
		if err := t.connect(ctx); err != nil {
			return err
		}
	case !t.routesMoved:
		return err
	default:
		reads = 1
	}
	for ; reads < routeReads; reads++ {
		fresh := &admissionTx{conn: t.conn, stmt: t.stmt, memory: &s.routes}
		if err = fresh.run(ctx, fn); !fresh.routesMoved {
			return err
		}
	}
	// Routes changing faster than a delivery is admitted: the provider retries (503).
	return inbox.DatabaseConflict("insert delivery", errRoutesMoved)
}

// connect gives t a pooled connection with the admission statements prepared, once one of
// the slots is free within ctx; disconnect returns both.
func (t *admissionTx) connect(ctx context.Context) error {
	if t.conn != nil {
		return nil
	}
	select {
	case t.store.slots <- struct{}{}:
	case <-ctx.Done():
		return sqlkit.Interpret("acquire connection", ctx.Err())
	}
	c, release, err := t.store.acquire(ctx)
	if err != nil {
		<-t.store.slots
		return err
	}
	t.conn, t.stmt = c.conn, c.stmt
	t.release = func() {
		release()
		<-t.store.slots
	}
	return nil
}

func (t *admissionTx) disconnect() {
	if t.release != nil {
		t.release()
		t.release = nil
	}
}

// routeReads bounds the transactions on routes read anew that one delivery runs when each
// finds the routes changed again before its insert (see insertAndCommit).
const routeReads = 3

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
		return sqlkit.Interpret("end transaction", endErr)
	}
	return err
}
