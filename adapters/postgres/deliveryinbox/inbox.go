// Package deliveryinbox is the PostgreSQL DeliveryInbox: it runs a provider handler's database
// writes in fenced transactions and records named steps in provider_event_step, so a retry or
// replay of a delivery skips the steps that committed and resumes the unfinished ones.
//
// A fenced transaction (ctx carries a dispatch identity, see ports.WithDispatch) is, in order:
//
//  1. BEGIN at READ COMMITTED;
//  2. copy admission: FOR KEY SHARE SKIP LOCKED on the erasure copy fence;
//  3. workspace fence: FOR KEY SHARE SKIP LOCKED on the event's workspace (workspace rows);
//  4. event fence: FOR KEY SHARE SKIP LOCKED on the event row, judged by erasure.Fence.Check;
//  5. for a Step: the step row, INSERT … ON CONFLICT DO NOTHING (a conflict skips fn);
//  6. fn with the transaction;
//  7. commit-time recheck: FOR SHARE SKIP LOCKED on the event row, judged again, then COMMIT.
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
// Write return is remembered for the dispatch (ports.RecordFenceRejection), and the consumer
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

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
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
	f, fenced := ports.DispatchFrom(ctx)
	if !fenced {
		err := in.plain(ctx, fn)
		return err == nil, err
	}
	err := in.fenced(ctx, f, step, fn)
	if errors.Is(err, errStepCommitted) {
		return false, nil
	}
	if err != nil {
		ports.RecordFenceRejection(ctx, err)
		return false, err
	}
	return true, nil
}

// Write runs fn in one fenced transaction without a step (natural-key upserts that are
// idempotent by themselves). Outside dispatch it is a plain transaction.
func (in *Inbox) Write(ctx context.Context, fn func(ctx context.Context, tx ports.Tx) error) (err error) {
	ctx, span := startStep(ctx, "inbox.write", inbox.Step{})
	defer func() { endStep(span, err == nil, err) }()
	f, fenced := ports.DispatchFrom(ctx)
	if !fenced {
		return in.plain(ctx, fn)
	}
	err = in.fenced(ctx, f, inbox.Step{}, fn)
	ports.RecordFenceRejection(ctx, err)
	return err
}

// Completed reports whether step committed for the delivery on ctx; false outside dispatch.
// Errors: context errors, or *inbox.TransientError when the database is unreachable.
func (in *Inbox) Completed(ctx context.Context, step inbox.Step) (bool, error) {
	f, fenced := ports.DispatchFrom(ctx)
	if !fenced || step.IsZero() {
		return false, nil
	}
	var done bool
	if err := in.pool.QueryRow(ctx, stepCommitted, f.EventID(), step.String()).Scan(&done); err != nil {
		return false, pgutil.Interpret("read committed step", err)
	}
	return done, nil
}

// plain runs fn in an unfenced transaction: a sync job or a test has no event to claim, and
// its writes follow their natural-key and version rules.
func (in *Inbox) plain(ctx context.Context, fn func(ctx context.Context, tx ports.Tx) error) error {
	var tx *Tx
	err := pgutil.WithTx(ctx, in.pool, readCommitted, func(ctx context.Context, ptx pgx.Tx) error {
		tx = &Tx{tx: ptx}
		return fn(ctx, tx)
	})
	if err == nil && tx != nil {
		tx.committed()
	}
	return err
}

// fenced is the transaction of the package comment; a zero step is a Write. pgutil.WithTx owns
// BEGIN, COMMIT and the rollback (on a context that survives cancellation, also after a panic).
func (in *Inbox) fenced(ctx context.Context, f erasure.Fence, step inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	wrap := func(err error) error {
		if step.IsZero() {
			return fmt.Errorf("inbox write of event %d: %w", f.EventID(), err)
		}
		return fmt.Errorf("inbox step %s of event %d: %w", step, f.EventID(), err)
	}
	var tx *Tx
	err := pgutil.WithTx(ctx, in.pool, readCommitted, func(ctx context.Context, ptx pgx.Tx) error {
		obs, err := observeFences(ctx, ptx, f)
		if err != nil {
			return wrap(err)
		}
		if err := f.Check(obs); err != nil {
			return wrap(err)
		}
		if !step.IsZero() {
			var one int
			err := ptx.QueryRow(ctx, claimStep, f.EventID(), step.String()).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return errStepCommitted
			}
			if err != nil {
				return wrap(pgutil.Interpret("claim step", err))
			}
		}
		tx = &Tx{tx: ptx}
		if err := fn(ctx, tx); err != nil {
			return fnError(err)
		}
		if err := recheck(ctx, ptx, f, tx.deletesOwnEvent); err != nil {
			return wrap(fmt.Errorf("commit-time recheck: %w", err))
		}
		return nil
	})
	if err == nil && tx != nil {
		if tx.deletesOwnEvent {
			// The consumer then counts a row it finds gone as handled, not as erased.
			ports.RecordOwnDeletion(ctx)
		}
		tx.committed()
	}
	return err
}

// observeFences takes the copy, workspace and event fences (steps 2 to 4) and reports what it
// saw. After the first fence it finds held it takes no further lock: it only reads whether the
// event still exists, so the domain can put erased before busy.
func observeFences(ctx context.Context, tx pgx.Tx, f erasure.Fence) (erasure.Observation, error) {
	var (
		obs         erasure.Observation
		inProgress  bool
		workspaceID *int64
	)
	err := tx.QueryRow(ctx, takeCopyAdmission, f.EventID()).Scan(&inProgress, &workspaceID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// The fence row is skipped: person erasure holds it FOR UPDATE. A missing row is a
		// broken schema, not contention: retrying it without budget would never end.
		var seeded bool
		if err := tx.QueryRow(ctx, copyFenceSeeded).Scan(&seeded); err != nil {
			return obs, pgutil.Interpret("read copy fence", err)
		}
		if !seeded {
			return obs, errors.New("the inbox_erasure_fence row 'inbox' is missing; run the migrations")
		}
		obs.ErasureInProgress = true
	case err != nil:
		return obs, pgutil.Interpret("take copy admission", err)
	default:
		obs.ErasureInProgress = inProgress
	}
	if obs.ErasureInProgress {
		obs.EventExists, _, err = rowsExist(ctx, tx, f.EventID(), nil)
		return obs, err
	}

	if workspaceID != nil {
		var one int
		err := tx.QueryRow(ctx, lockWorkspaceKeyShare, *workspaceID).Scan(&one)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// Skipped or gone: a workspace operation holds it, or it was deleted and its
			// events with it.
			obs.EventExists, obs.WorkspaceBusy, err = rowsExist(ctx, tx, f.EventID(), workspaceID)
			return obs, err
		case err != nil:
			return obs, pgutil.Interpret("fence workspace", err)
		}
	}

	st, err := readLease(ctx, tx, lockEventKeyShare, f.EventID())
	if err != nil {
		return obs, pgutil.Interpret("fence event", err)
	}
	return st.observation(ctx, tx, f.EventID())
}

// recheck is step 7: under a shared row lock held through COMMIT, the event must still be
// LEASED under the fence's epoch. A handler that deleted its own event on purpose commits.
func recheck(ctx context.Context, tx pgx.Tx, f erasure.Fence, deletesOwnEvent bool) error {
	st, err := readLease(ctx, tx, recheckEventShare, f.EventID())
	if err != nil {
		return pgutil.Interpret("recheck event", err)
	}
	obs, err := st.observation(ctx, tx, f.EventID())
	if err != nil {
		return err
	}
	if !obs.EventExists && deletesOwnEvent {
		return nil
	}
	return f.Check(obs)
}

// leaseRead is the event row as a locking read found it; found is false when the row was
// skipped (held by another transaction) or is gone.
type leaseRead struct {
	found bool
	state inbox.State
	epoch inbox.Epoch
}

func readLease(ctx context.Context, tx pgx.Tx, query string, eventID int64) (leaseRead, error) {
	var (
		state string
		epoch int64
	)
	err := tx.QueryRow(ctx, query, eventID).Scan(&state, &epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return leaseRead{}, nil
	}
	if err != nil {
		return leaseRead{}, err
	}
	s, err := inbox.ParseState(state)
	if err != nil {
		return leaseRead{}, err
	}
	return leaseRead{found: true, state: s, epoch: inbox.Epoch(epoch)}, nil
}

// observation turns a locking read into what the domain judges: a skipped row that still
// exists is busy (a renewal or outcome committing, a reaper's FOR UPDATE, an erasure's DELETE
// in progress), a missing one is erased.
func (r leaseRead) observation(ctx context.Context, tx pgx.Tx, eventID int64) (erasure.Observation, error) {
	if r.found {
		return erasure.Observation{EventExists: true, State: r.state, Epoch: r.epoch}, nil
	}
	exists, _, err := rowsExist(ctx, tx, eventID, nil)
	return erasure.Observation{EventExists: exists, EventBusy: exists}, err
}

// rowsExist reads, without a lock, whether the event and the workspace (nil: none) exist.
func rowsExist(ctx context.Context, tx pgx.Tx, eventID int64, workspaceID *int64) (event, workspace bool, err error) {
	if err := tx.QueryRow(ctx, eventAndWorkspaceExist, eventID, workspaceID).Scan(&event, &workspace); err != nil {
		return false, false, pgutil.Interpret("read fenced rows", err)
	}
	return event, workspace, nil
}

// fnError is what a fenced transaction returns for fn's error: fn's own error, unchanged, so
// the handler and Classify see what it said, except that a database error a mirror store
// returned uninterpreted (a deadlock, a serialization failure, a lock timeout, a lost
// connection) is wrapped in the transient class pgutil gives it. The wrap keeps fn's error in
// the chain.
func fnError(err error) error {
	var (
		transient *inbox.TransientError
		pgErr     *pgconn.PgError
	)
	if errors.As(err, &transient) || inbox.IsFenceRejection(err) ||
		(!errors.As(err, &pgErr) && !pgutil.IsConnectionError(err)) {
		return err
	}
	if interpreted := pgutil.Interpret("inbox write", err); errors.As(interpreted, &transient) {
		return interpreted
	}
	return err
}
