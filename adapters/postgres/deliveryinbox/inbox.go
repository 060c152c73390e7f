// Package deliveryinbox is the PostgreSQL DeliveryInbox: it runs a provider handler's database
// writes in fenced transactions and records named steps in provider_event_step, so a retry or
// replay of a delivery skips the steps that committed and resumes the unfinished ones.
//
// A fenced transaction (ctx carries a dispatch identity, see dispatch.WithDispatch) is, in order:
//
//  1. BEGIN at READ COMMITTED;
//  2. copy admission: FOR KEY SHARE SKIP LOCKED on the erasure copy fence;
//  3. workspace fence: FOR KEY SHARE SKIP LOCKED on the event's workspace (workspace rows);
//  4. event fence: FOR KEY SHARE SKIP LOCKED on the event row, judged by erasure.Fence.Check;
//  5. for a Step: the step row, INSERT … ON CONFLICT DO NOTHING (a conflict skips fn);
//  6. fn with the transaction;
//  7. commit-time recheck: FOR SHARE SKIP LOCKED on the event row, judged again, then COMMIT.
//
// Steps 1 to 5 travel in one round trip (BEGIN and inbox_fence_open), and the statements fn
// queued with ExecAtCommit (its change-feed publications), step 7 and COMMIT in one more
// (inbox_fence_recheck raises when the lease changed, so COMMIT never runs): a fenced
// transaction costs two round trips besides fn's own statements.
//
// A lock that is held elsewhere is skipped, never waited for: the adapter reads without a lock
// whether the skipped row still exists and lets the domain tell busy (inbox.ErrBusy, retried in
// order without budget) from erased (inbox.ErrErased). A changed lease is inbox.ErrLeaseLost and
// rolls the whole transaction back, step row included. Everything a step wrote commits with its
// step row or not at all; what it did outside PostgreSQL (HTTP, SMTP) is not covered.
//
// Provider code with a fallback must return a rejected write unchanged before it logs or tries
// another source (inbox.IsFenceRejection); the consumer classifies it with inbox.Classify. A
// handler that swallows one anyway does not end its delivery as DONE: every rejection Step and
// Write return is remembered for the dispatch (dispatch.RecordFenceRejection), and the consumer
// judges the handler's nil as that rejection.
package deliveryinbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.DeliveryInbox = (*Inbox)(nil)

// readCommitted: every fence statement and the recheck must read the newest committed row
// (see queries.go).
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// errStepCommitted ends the transaction of a step that an earlier attempt committed. It never
// leaves the package: Step turns it into ran=false.
var errStepCommitted = errors.New("step committed before")

// Inbox is the DeliveryInbox on a PostgreSQL pool shared with the other adapters.
type Inbox struct {
	pool *pgxpool.Pool
}

// New makes the inbox on pool.
func New(pool *pgxpool.Pool) (*Inbox, error) {
	if pool == nil {
		return nil, errors.New("delivery inbox needs a database pool")
	}
	return &Inbox{pool: pool}, nil
}

// Step runs fn with the claim of step in one transaction (see ports.DeliveryInbox). ran is true
// when fn ran and its transaction committed; false with a nil error when the step committed in
// an earlier attempt (fn is not called); false with any error, after which nothing of the step
// is committed. Outside dispatch it runs fn in a plain transaction and records no step row.
func (in *Inbox) Step(ctx context.Context, step inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) (ran bool, err error) {
	ctx, span := startStep(ctx, "inbox.step", step)
	defer func() { endStep(span, ran, err) }()
	return in.step(ctx, step, fn)
}

// startStep starts a step's span: its operation (the step name up to the first '/': the item
// ids stay out of the trace) and the database it writes.
func startStep(ctx context.Context, name string, step inbox.Step) (context.Context, trace.Span) {
	ctx, span := telemetry.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		op, _, _ := strings.Cut(step.String(), "/")
		span.SetAttributes(telemetry.DBAttributes("TRANSACTION", "provider_event_step")...)
		if op != "" {
			span.SetAttributes(telemetry.AttrStep.String(op))
		}
	}
	return ctx, span
}

// endStep ends a step's span with whether it ran (false: committed by an earlier attempt) and
// its error's kind, never the error's message.
func endStep(span trace.Span, ran bool, err error) {
	if span.IsRecording() {
		span.SetAttributes(telemetry.AttrStepRan.Bool(ran))
		if err != nil {
			span.SetStatus(codes.Error, strings.Join(inbox.CauseTypes(err), " <- "))
		}
	}
	span.End()
}

func (in *Inbox) step(ctx context.Context, step inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) (bool, error) {
	if step.IsZero() {
		return false, fmt.Errorf("inbox step: %w: empty name", inbox.ErrInvalidStepName)
	}
	f, fenced := dispatch.DispatchFrom(ctx)
	if !fenced {
		err := in.plain(ctx, fn)
		return err == nil, err
	}
	err := in.fenced(ctx, f, step, fn)
	if errors.Is(err, errStepCommitted) {
		return false, nil
	}
	if err != nil {
		dispatch.RecordFenceRejection(ctx, err)
		return false, err
	}
	return true, nil
}

// Write runs fn in one fenced transaction without a step (natural-key upserts that are
// idempotent by themselves). Outside dispatch it is a plain transaction.
func (in *Inbox) Write(ctx context.Context, fn func(ctx context.Context, tx ports.Tx) error) (err error) {
	ctx, span := startStep(ctx, "inbox.write", inbox.Step{})
	defer func() { endStep(span, err == nil, err) }()
	f, fenced := dispatch.DispatchFrom(ctx)
	if !fenced {
		return in.plain(ctx, fn)
	}
	err = in.fenced(ctx, f, inbox.Step{}, fn)
	dispatch.RecordFenceRejection(ctx, err)
	return err
}

// Completed reports whether step committed for the delivery on ctx; false outside dispatch.
// Errors: context errors, or *inbox.TransientError when the database is unreachable.
func (in *Inbox) Completed(ctx context.Context, step inbox.Step) (bool, error) {
	f, fenced := dispatch.DispatchFrom(ctx)
	if !fenced || step.IsZero() {
		return false, nil
	}
	var done bool
	if err := in.pool.QueryRow(ctx, stepCommitted, f.EventID(), step.String()).Scan(&done); err != nil {
		return false, sqlkit.Interpret("read committed step", err)
	}
	return done, nil
}

// plain runs fn in an unfenced transaction: a sync job or a test has no event to claim, and
// its writes follow their natural-key and version rules.
func (in *Inbox) plain(ctx context.Context, fn func(ctx context.Context, tx ports.Tx) error) error {
	var tx ports.Tx
	err := sqlkit.WithTx(ctx, in.pool, readCommitted, func(ctx context.Context, ptx pgx.Tx) error {
		tx = sqlkit.Adopt(ptx)
		return fn(ctx, tx)
	})
	if err == nil && tx != nil {
		sqlkit.Committed(tx)
	}
	return err
}

// fenced is the transaction of the package comment; a zero step is a Write. It owns BEGIN,
// COMMIT and the rollback itself (on a context that survives cancellation, also after a panic)
// so that the fence statements travel with them: BEGIN and steps 2 to 5 are one
// round trip (inbox_fence_open, migration 00100), fn's statements follow, and the publications
// fn queued (ExecAtCommit), step 7 (inbox_fence_recheck) and COMMIT are one more. What the
// fences observed is judged here by erasure.Fence.Check, as before.
func (in *Inbox) fenced(ctx context.Context, f erasure.Fence, step inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) (err error) {
	wrap := func(err error) error {
		if step.IsZero() {
			return fmt.Errorf("inbox write of event %d: %w", f.EventID(), err)
		}
		return fmt.Errorf("inbox step %s of event %d: %w", step, f.EventID(), err)
	}
	conn, err := in.pool.Acquire(ctx)
	if err != nil {
		return sqlkit.Interpret("begin", err)
	}
	defer conn.Release()
	defer func() {
		p := recover()
		if (p != nil || err != nil) && conn.Conn().PgConn().TxStatus() != 'I' {
			// A broken connection stays broken: the pool closes it on release.
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		if p != nil {
			panic(p)
		}
	}()

	obs, attempted, claimed, err := openFence(ctx, conn.Conn(), f, step)
	if err != nil {
		return wrap(err)
	}
	if err := f.Check(obs); err != nil {
		return wrap(err)
	}
	if !step.IsZero() {
		if !attempted {
			// Unreachable while inbox_fence_open claims under exactly the observation Check
			// passes; kept so that a passing check never runs fn without its step row.
			var one int
			err := conn.QueryRow(ctx, claimStep, f.EventID(), step.String()).Scan(&one)
			claimed = err == nil
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return wrap(sqlkit.Interpret("claim step", err))
			}
		}
		if !claimed {
			return errStepCommitted
		}
	}
	tx := sqlkit.FencedTx(connTx{conn: conn.Conn()})
	if err := fn(ctx, tx); err != nil {
		return fnError(err)
	}
	if err := commitFenced(ctx, conn.Conn(), f, tx); err != nil {
		return wrap(err)
	}
	if tx.OwnEventDeleted() {
		// The consumer then counts a row it finds gone as handled, not as erased.
		dispatch.RecordOwnDeletion(ctx)
	}
	sqlkit.Committed(tx)
	return nil
}

// openFence sends BEGIN and inbox_fence_open (steps 1 to 5) in one round trip and returns what
// the fences observed and whether the step row was claimed (attempted: the function tried).
func openFence(ctx context.Context, conn *pgx.Conn, f erasure.Fence, step inbox.Step) (obs erasure.Observation, attempted, claimed bool, err error) {
	var stepName *string
	if !step.IsZero() {
		s := step.String()
		stepName = &s
	}
	b := &pgx.Batch{}
	b.Queue(beginReadCommitted)
	b.Queue(openFenceSQL, f.EventID(), int64(f.Epoch()), stepName)
	br := conn.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			err = sqlkit.Interpret("take fences", cerr)
		}
	}()
	if _, err := br.Exec(); err != nil {
		return obs, false, false, sqlkit.Interpret("begin", err)
	}
	var (
		state *string
		epoch *int64
	)
	err = br.QueryRow().Scan(&obs.ErasureInProgress, &obs.WorkspaceBusy, &obs.EventExists, &obs.EventBusy,
		&state, &epoch, &attempted, &claimed)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == fenceRowMissing {
		// A missing fence row is a broken schema, not contention: retrying it without budget
		// would never end.
		return obs, false, false, errors.New("the inbox_erasure_fence row 'inbox' is missing; run the migrations")
	}
	if err != nil {
		return obs, false, false, sqlkit.Interpret("take fences", err)
	}
	if state != nil && epoch != nil {
		if obs.State, err = inbox.ParseState(*state); err != nil {
			return obs, false, false, err
		}
		obs.Epoch = inbox.Epoch(*epoch)
	}
	return obs, attempted, claimed, nil
}

// commitFenced sends the publications fn queued, the commit-time recheck (step 7) and COMMIT
// in one round trip. A recheck that does not find the event LEASED under the fence's epoch
// raises, so COMMIT never runs; its SQLSTATE is turned back into the observation Fence.Check
// judges. A handler that deleted its own event on purpose commits.
func commitFenced(ctx context.Context, conn *pgx.Conn, f erasure.Fence, tx *sqlkit.Tx) (err error) {
	b := &pgx.Batch{}
	for _, d := range tx.AtCommit() {
		b.Queue(d.SQL, d.Args...)
	}
	b.Queue(recheckFenceSQL, f.EventID(), int64(f.Epoch()), tx.OwnEventDeleted())
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			err = sqlkit.Interpret("commit", cerr)
		}
	}()
	for _, d := range tx.AtCommit() {
		if _, err := br.Exec(); err != nil {
			return fnError(sqlkit.Interpret(d.Op, err))
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("commit-time recheck: %w", recheckVerdict(f, err))
	}
	if _, err := br.Exec(); err != nil {
		return sqlkit.Interpret("commit", err)
	}
	return nil
}

// recheckVerdict turns the error inbox_fence_recheck raised into the fence's verdict on what it
// observed; any other error is interpreted as a database failure.
func recheckVerdict(f erasure.Fence, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return sqlkit.Interpret("recheck event", err)
	}
	var obs erasure.Observation
	switch pgErr.Code {
	case recheckOtherLease:
		var (
			state string
			epoch int64
		)
		if _, serr := fmt.Sscanf(pgErr.Detail, "%s %d", &state, &epoch); serr != nil {
			return fmt.Errorf("read recheck detail: %w", serr)
		}
		st, perr := inbox.ParseState(state)
		if perr != nil {
			return perr
		}
		obs = erasure.Observation{EventExists: true, State: st, Epoch: inbox.Epoch(epoch)}
	case recheckBusy:
		obs = erasure.Observation{EventExists: true, EventBusy: true}
	case recheckGone:
		obs = erasure.Observation{}
	default:
		return sqlkit.Interpret("recheck event", err)
	}
	if verdict := f.Check(obs); verdict != nil {
		return verdict
	}
	return inbox.ErrLeaseLost // the function refused what Check would pass: never commit it
}

// fnError is what a fenced transaction returns for fn's error: fn's own error, unchanged, so
// the handler and Classify see what it said, except that a database error a mirror store
// returned uninterpreted (a deadlock, a serialization failure, a lock timeout, a lost
// connection) is wrapped in the transient class sqlkit gives it. The wrap keeps fn's error in
// the chain.
func fnError(err error) error {
	var (
		transient *inbox.TransientError
		pgErr     *pgconn.PgError
	)
	if errors.As(err, &transient) || inbox.IsFenceRejection(err) ||
		(!errors.As(err, &pgErr) && !sqlkit.IsConnectionError(err)) {
		return err
	}
	if interpreted := sqlkit.Interpret("inbox write", err); errors.As(interpreted, &transient) {
		return interpreted
	}
	return err
}
