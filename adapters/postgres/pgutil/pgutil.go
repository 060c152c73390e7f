// Package pgutil is shared by the PostgreSQL adapters: transactions as closures and the one
// translation of pgx errors into the domain's and the ports' errors.
package pgutil

import (
	"time"

	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// SQLSTATE codes the adapters act on.
const (
	UniqueViolation      = "23505"
	ForeignKeyViolation  = "23503"
	SerializationFailure = "40001"
	DeadlockDetected     = "40P01"
	LockNotAvailable     = "55P03"
	QueryCanceled        = "57014"
	AdminShutdown        = "57P01"
	CannotConnectNow     = "57P03"
)

// Beginner is a pool or a connection that can begin a transaction.
type Beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// WithTx runs fn in a transaction and commits it, or rolls it back when fn or the commit fails.
// The rollback runs on a context that survives cancellation of ctx, so a cancelled request
// still releases its locks at once instead of when the connection is reaped.
func WithTx(ctx context.Context, db Beginner, opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return Interpret("begin", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err = fn(ctx, tx); err != nil {
		return err
	}
	if err = tx.Commit(ctx); err != nil {
		return Interpret("commit", err)
	}
	return nil
}

// Interpret translates a pgx error of operation op:
//   - pgx.ErrNoRows → ports.ErrNotFound;
//   - unique violation → ports.ErrConflict;
//   - serialization failure, deadlock, lock not available (lock_timeout, NOWAIT) →
//     *inbox.TransientError with Conflict (bounded exponential backoff, no budget; not the
//     expected contention of a SKIP LOCKED fence, which the fences report as inbox.ErrBusy);
//   - a lost connection, shutdown or refused connection → *inbox.TransientError;
//   - context errors pass through unchanged.
//
// The original error stays in the chain for logs of the adapter; callers test with errors.Is.
func Interpret(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, ports.ErrNotFound)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case UniqueViolation:
			return fmt.Errorf("%s: %w (%s)", op, ports.ErrConflict, pgErr.ConstraintName)
		case SerializationFailure, DeadlockDetected, LockNotAvailable:
			return inbox.DatabaseConflict(op, err)
		case AdminShutdown, CannotConnectNow, QueryCanceled:
			return inbox.Transient(op, err)
		}
		// Connection-class errors (08xxx) and insufficient resources (53xxx) are transient.
		if len(pgErr.Code) == 5 && (pgErr.Code[:2] == "08" || pgErr.Code[:2] == "53") {
			return inbox.Transient(op, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	if IsConnectionError(err) {
		return inbox.Transient(op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// IsConnectionError reports whether err means the database could not be reached or the
// connection broke (as opposed to an error the server returned for a statement).
func IsConnectionError(err error) bool {
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &netErr) || errors.As(err, &connectErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, net.ErrClosed)
}

// NowParam is the "now" argument of a statement that reads coalesce($n::timestamptz,
// clock_timestamp()): nil (SQL NULL, so the database clock decides) without a clock, the
// clock's instant with one (a spec that moves time).
func NowParam(clock ports.Clock) *time.Time {
	if clock == nil {
		return nil
	}
	t := clock.Now()
	return &t
}
