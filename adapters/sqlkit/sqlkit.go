// Package sqlkit is what the PostgreSQL code shares, the core's stores (adapters/postgres/…) and
// the providers' mirror stores (adapters/<provider>/<provider>mirror) alike, so that a mirror
// store needs no package of adapters/postgres: transactions as closures, the one translation of
// pgx errors into the domain's and the ports' errors (Interpret), the step transaction the
// delivery inbox opens and a mirror store writes through (Tx, PgxTx, ExecAtCommit,
// AfterCommit), change versions in SQL (MirrorVersion, VersionOf) and the person-data rules
// erasure runs (PersonRule, TextRule).
package sqlkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

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
	CrashShutdown        = "57P02"
	CannotConnectNow     = "57P03"
	// ReadOnlyTransaction is what a write gets on a node that stopped accepting writes: a
	// primary being demoted (pg_auto_failover's draining sets default_transaction_read_only),
	// or a session that reached a standby. It is the failover seen from a live connection.
	ReadOnlyTransaction = "25006"
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
//   - a lost connection, shutdown or refused connection, a node that became read-only
//     (SQLSTATE 25006: a failover or switchover under way) → *inbox.TransientError
//     (IsConnectionError; docs/failures.md, docs/operations/database-failover.md);
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
		case AdminShutdown, CrashShutdown, CannotConnectNow, QueryCanceled, ReadOnlyTransaction:
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

// IsConnectionError reports whether err means the database could not be reached, the
// connection broke, or the node stopped accepting writes (as opposed to an error the server
// returned for a statement): every way a failover shows itself to a client.
//   - dial and network errors (refused, reset, timeouts: net.Error), pgconn's ConnectError (no
//     host of a multi-host URL accepted a read-write session included) and errors pgconn marks
//     safe to retry (nothing was sent);
//   - a server that vanished mid-message: pgconn wraps the read's io.ErrUnexpectedEOF or io.EOF
//     (a SIGKILLed postmaster on loopback ends the socket this way, no reset);
//   - a connection pgx already closed (pgconn.ErrConnClosed, net.ErrClosed) and pgconn's own
//     timeouts;
//   - the server's own goodbyes: admin shutdown (57P01, a fast stop or pg_terminate_backend),
//     crash shutdown (57P02), cannot connect now (57P03, starting up or in recovery), any
//     connection-exception class 08 code, and read-only transaction (25006, a demoted primary).
func IsConnectionError(err error) bool {
	if err == nil {
		return false
	}
	var (
		netErr     net.Error
		connectErr *pgconn.ConnectError
		pgErr      *pgconn.PgError
	)
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case AdminShutdown, CrashShutdown, CannotConnectNow, ReadOnlyTransaction:
			return true
		}
		return len(pgErr.Code) == 5 && pgErr.Code[:2] == "08"
	}
	return errors.As(err, &netErr) || errors.As(err, &connectErr) || pgconn.SafeToRetry(err) ||
		pgconn.Timeout(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, net.ErrClosed)
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

// CloseOnReadOnly makes a connection close itself when the server answers a statement with
// read-only transaction (SQLSTATE 25006), as pgconn's default already does on a FATAL error.
// A node that stops accepting writes (a primary being demoted by pg_auto_failover or Patroni,
// still up and draining) keeps its sessions: without this a pooled connection would keep
// failing every write until the node restarts, however long that takes. Closed, it leaves the
// pool, and the next connection asks the URL's hosts again for a read-write session
// (target_session_attrs=read-write). The statement's own error is still returned, and
// Interpret classes it as a transport failure.
func CloseOnReadOnly(cfg *pgconn.Config) {
	next := cfg.OnPgError
	cfg.OnPgError = func(conn *pgconn.PgConn, pgErr *pgconn.PgError) bool {
		if pgErr.Code == ReadOnlyTransaction {
			return false
		}
		if next != nil {
			return next(conn, pgErr)
		}
		return !strings.EqualFold(pgErr.Severity, "FATAL")
	}
}
