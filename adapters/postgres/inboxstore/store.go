// Package inboxstore implements ports.InboxStore on PostgreSQL: claiming, outcome writes,
// renewal, release, reaping, retention, replay and the singleton lease that picks the one
// server running retention. The domain (domain/inbox) decides every transition; the SQL here
// stores it and backstops the lease rules (epoch conditions, the leased-scope unique index).
package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// leasedScopeIndex is the backstop for one LEASED row per scope.
const leasedScopeIndex = "uq_provider_event_leased_scope"

// Config tunes the store; the zero value is valid.
type Config struct {
	// ClaimAttempts is how often Claim runs its statement again after it lost a race at the
	// leased-scope index before it returns no rows (default 3).
	ClaimAttempts int
	// Clock, when set, is the "now" of every statement: lease expiry, due times, end times,
	// singleton leases and gauge ages. Nil, as in production, leaves it to the database's
	// clock_timestamp(), the one clock every server shares; specs set it to move time.
	Clock ports.Clock
}

func (c *Config) setDefaults() {
	if c.ClaimAttempts == 0 {
		c.ClaimAttempts = 3
	}
}

func (c Config) validate() error {
	if c.ClaimAttempts < 1 {
		return errors.New("inboxstore: ClaimAttempts must be at least 1")
	}
	return nil
}

// Store is the PostgreSQL inbox store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	cfg  Config
}

var _ ports.InboxStore = (*Store)(nil)

// New returns a store on pool.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("inboxstore: pool is required")
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Store{pool: pool, cfg: cfg}, nil
}

// now is the "now" parameter of the statements: nil (SQL NULL, so the database clock) unless
// a Clock is configured.
func (s *Store) now() *time.Time { return sqlkit.NowParam(s.cfg.Clock) }

// Claim implements ports.InboxStore. A statement that loses a race at the leased-scope index is
// contention, not an error: it is run again, and after ClaimAttempts the claim returns no rows.
func (s *Store) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	if limit <= 0 {
		return nil, nil
	}
	if lease <= 0 {
		return nil, errors.New("claim: lease must be positive")
	}
	for attempt := 1; ; attempt++ {
		claimed, err := s.claimOnce(ctx, owner, limit, lease)
		if err == nil {
			return claimed, nil
		}
		if !isLeasedScopeViolation(err) {
			return nil, sqlkit.Interpret("claim deliveries", err)
		}
		if attempt >= s.cfg.ClaimAttempts {
			return nil, nil
		}
	}
}

func (s *Store) claimOnce(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	// One pipeline, one Sync: pinClaimPlan's settings are local to the implicit transaction
	// the claim runs in.
	batch := &pgx.Batch{}
	batch.Queue(pinClaimPlan)
	batch.Queue(claimOldestDueInFreeScope, limit, lease.Microseconds(), owner, s.now())
	results := s.pool.SendBatch(ctx, batch)
	claimed, err := readClaimed(results, limit)
	if closeErr := results.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

func readClaimed(results pgx.BatchResults, limit int) ([]ports.Claimed, error) {
	if _, err := results.Exec(); err != nil {
		return nil, err
	}
	rows, err := results.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	claimed := make([]ports.Claimed, 0, limit)
	for rows.Next() {
		var (
			r           deliveryRow
			payload     []byte
			headers     map[string]string
			traceParent *string
		)
		if err := rows.Scan(append(r.targets(), &payload, &headers, &traceParent)...); err != nil {
			return nil, err
		}
		d, err := r.delivery()
		if err != nil {
			return nil, err
		}
		claimed = append(claimed, ports.Claimed{Delivery: d, Payload: payload, Headers: headers, TraceParent: deref(traceParent)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return claimed, nil
}

// ExplainClaim returns the plan of the claim statement for limit rows, with the settings the
// claim runs under, as EXPLAIN prints it (FORMAT TEXT). With analyze the statement runs, and
// leases, inside a transaction that is rolled back, so nothing changes; the plan then shows
// the actual rows and time of each step. It exists so that operators and specs see the plan
// the claimers get.
func (s *Store) ExplainClaim(ctx context.Context, limit int, analyze bool) (string, error) {
	options := "COSTS, FORMAT TEXT"
	if analyze {
		options = "ANALYZE, BUFFERS, " + options
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", sqlkit.Interpret("explain claim", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, pinClaimPlan); err != nil {
		return "", sqlkit.Interpret("explain claim", err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN ("+options+") "+claimOldestDueInFreeScope,
		limit, time.Minute.Microseconds(), "explain", s.now())
	if err != nil {
		return "", sqlkit.Interpret("explain claim", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", sqlkit.Interpret("explain claim", err)
	}
	return strings.Join(lines, "\n"), nil
}

func isLeasedScopeViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlkit.UniqueViolation && pgErr.ConstraintName == leasedScopeIndex
}

// Record implements ports.InboxStore: one statement for the whole batch.
func (s *Store) Record(ctx context.Context, results []ports.Result) ([]ports.RecordStatus, error) {
	if len(results) == 0 {
		return nil, nil
	}
	n := len(results)
	var (
		ids          = make([]int64, n)
		epochs       = make([]int64, n)
		states       = make([]string, n)
		dueAts       = make([]*time.Time, n)
		errorClasses = make([]*string, n)
		attemptDelta = make([]int32, n)
		budgetDelta  = make([]int32, n)
		outcomes     = make([]string, n)
		causes       = make([]*string, n)
	)
	for i, r := range results {
		state, err := stateOf(r.Decision)
		if err != nil {
			return nil, fmt.Errorf("record outcome of delivery %d: %w", r.Ack.ID, err)
		}
		ids[i], epochs[i], states[i] = r.Ack.ID, int64(r.Ack.Epoch), state.String()
		outcomes[i] = r.Decision.Outcome().String()
		if cause := r.Decision.Cause(); !cause.IsZero() {
			c := cause.String()
			causes[i] = &c
		}
		switch state {
		case inbox.Queued:
			due := r.Decision.DueAt()
			dueAts[i] = &due
			if !r.Decision.CountsAttempt() {
				attemptDelta[i] = -1 // contention gives the attempt back
			}
		case inbox.Dead:
			class := r.Decision.ErrorClass()
			errorClasses[i] = &class
		}
		if r.Decision.UsesBudget() {
			budgetDelta[i] = 1
		}
	}
	rows, err := s.pool.Query(ctx, recordOutcomes, ids, epochs, states, dueAts, errorClasses, attemptDelta, budgetDelta, s.now(), outcomes, causes)
	if err != nil {
		return nil, sqlkit.Interpret("record outcomes", err)
	}
	type written struct {
		ID      int64
		Applied bool
		Present bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[written])
	if err != nil {
		return nil, sqlkit.Interpret("record outcomes", err)
	}
	byID := make(map[int64]ports.RecordStatus, len(got))
	for _, w := range got {
		switch {
		case w.Applied:
			byID[w.ID] = ports.RecordApplied
		case w.Present:
			byID[w.ID] = ports.RecordLeaseLost
		default:
			byID[w.ID] = ports.RecordGone
		}
	}
	status := make([]ports.RecordStatus, len(ids))
	for i, id := range ids {
		if status[i] = byID[id]; status[i] == 0 {
			status[i] = ports.RecordGone
		}
	}
	return status, nil
}

// stateOf is the row state an outcome write leaves. Dropped decisions are never written.
func stateOf(d inbox.Decision) (inbox.State, error) {
	switch d.Outcome() {
	case inbox.OutcomeDone:
		return inbox.Done, nil
	case inbox.OutcomeRetried:
		if d.DueAt().IsZero() {
			return inbox.State{}, errors.New("a retried outcome needs a due time")
		}
		return inbox.Queued, nil
	case inbox.OutcomeDead:
		return inbox.Dead, nil
	default:
		return inbox.State{}, fmt.Errorf("outcome %q is not written", d.Outcome())
	}
}

func appliedFlags(ids, returned []int64) []bool {
	set := make(map[int64]struct{}, len(returned))
	for _, id := range returned {
		set[id] = struct{}{}
	}
	applied := make([]bool, len(ids))
	for i, id := range ids {
		_, applied[i] = set[id]
	}
	return applied
}

func ackArrays(acks []ports.Ack) (ids, epochs []int64) {
	ids, epochs = make([]int64, len(acks)), make([]int64, len(acks))
	for i, a := range acks {
		ids[i], epochs[i] = a.ID, int64(a.Epoch)
	}
	return ids, epochs
}

// Renew implements ports.InboxStore: one statement for every lease of the batch.
func (s *Store) Renew(ctx context.Context, acks []ports.Ack, lease time.Duration) ([]bool, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	if lease <= 0 {
		return nil, errors.New("renew: lease must be positive")
	}
	ids, epochs := ackArrays(acks)
	rows, err := s.pool.Query(ctx, renewHeldLeases, ids, epochs, lease.Microseconds(), s.now())
	if err != nil {
		return nil, sqlkit.Interpret("renew leases", err)
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, sqlkit.Interpret("renew leases", err)
	}
	return appliedFlags(ids, renewed), nil
}

// Release implements ports.InboxStore. Each released lease is recorded as an attempt with
// outcome "released" in the same statement (releaseHeldLeases).
func (s *Store) Release(ctx context.Context, acks []ports.Ack) (int, error) {
	if len(acks) == 0 {
		return 0, nil
	}
	ids, epochs := ackArrays(acks)
	tag, err := s.pool.Exec(ctx, releaseHeldLeases, ids, epochs, s.now())
	if err != nil {
		return 0, sqlkit.Interpret("release leases", err)
	}
	return int(tag.RowsAffected()), nil
}

// ReleaseUnheld implements ports.InboxStore.
func (s *Store) ReleaseUnheld(ctx context.Context, owner string, held []int64) (int, error) {
	if held == nil {
		held = []int64{}
	}
	tag, err := s.pool.Exec(ctx, releaseUnheldLeases, owner, held, s.now())
	if err != nil {
		return 0, sqlkit.Interpret("release unheld leases", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteEnded implements ports.InboxStore (one batch per call). The last batch of a run (fewer
// rows than limit) also runs sweepScopeHeads.
func (s *Store) DeleteEnded(ctx context.Context, doneBefore, deadBefore time.Time, limit int) (int64, error) {
	if limit <= 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, deleteEndedRows, doneBefore, deadBefore, limit)
	if err != nil {
		return 0, sqlkit.Interpret("delete ended deliveries", err)
	}
	if tag.RowsAffected() < int64(limit) {
		// The last batch of a retention run also repairs the scope heads a busy latch left.
		if _, err := s.pool.Exec(ctx, sweepScopeHeads); err != nil {
			return 0, sqlkit.Interpret("sweep scope heads", err)
		}
	}
	return tag.RowsAffected(), nil
}

// DoneCountedUpTo is how many DONE rows Stats counts exactly; beyond it the DONE count is an
// estimate (ports.InboxStats.DoneEstimated).
const DoneCountedUpTo = 10_000

// Stats implements ports.InboxStore. Every state is present, with 0 when it has no rows. Its
// cost follows the backlog and the dead letters, not the DONE rows retained for replay.
func (s *Store) Stats(ctx context.Context) (ports.InboxStats, error) {
	var (
		queued, leased, dead, done, tableRows int64
		overdue                               float64
	)
	err := s.pool.QueryRow(ctx, inboxStats, DoneCountedUpTo, s.now()).Scan(&queued, &overdue, &leased, &dead, &done, &tableRows)
	if err != nil {
		return ports.InboxStats{}, sqlkit.Interpret("count deliveries", err)
	}
	stats := ports.InboxStats{
		Counts:          map[inbox.State]int64{inbox.Queued: queued, inbox.Leased: leased, inbox.Dead: dead, inbox.Done: done},
		OldestQueuedAge: time.Duration(overdue * float64(time.Second)),
	}
	if done > DoneCountedUpTo {
		stats.Counts[inbox.Done] = max(done, tableRows-queued-leased-dead)
		stats.DoneEstimated = true
	}
	return stats, nil
}

// AcquireSingleton implements ports.InboxStore.
func (s *Store) AcquireSingleton(ctx context.Context, name, holder string, lease time.Duration) (bool, error) {
	if name == "" || holder == "" || lease <= 0 {
		return false, errors.New("acquire singleton: name, holder and a positive lease are required")
	}
	var got string
	err := s.pool.QueryRow(ctx, acquireSingleton, name, holder, lease.Microseconds(), s.now()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, sqlkit.Interpret("acquire singleton "+name, err)
	}
	return got == holder, nil
}

// ReleaseSingleton implements ports.InboxStore.
func (s *Store) ReleaseSingleton(ctx context.Context, name, holder string) error {
	if _, err := s.pool.Exec(ctx, releaseSingleton, name, holder); err != nil {
		return sqlkit.Interpret("release singleton "+name, err)
	}
	return nil
}
