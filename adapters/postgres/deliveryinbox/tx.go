package deliveryinbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.Tx = (*Tx)(nil)

// ErrForeignTx is returned by PgxTx for a ports.Tx this adapter did not open (an in-memory
// fake, a nil value): a PostgreSQL mirror store cannot write through it.
var ErrForeignTx = errors.New("transaction was not opened by the PostgreSQL delivery inbox")

// ErrTxOwnedByInbox is returned by Commit and Rollback of the transaction PgxTx hands out.
var ErrTxOwnedByInbox = errors.New("the delivery inbox owns this transaction's commit and rollback")

// Tx is the write transaction the inbox hands to fn. Like the pgx.Tx inside it, it belongs to
// the goroutine that runs fn and ends when fn returns.
type Tx struct {
	tx              pgx.Tx
	deletesOwnEvent bool
	afterCommit     []func()
	// fenced: a fenced transaction of the inbox, which sends atCommit with its recheck and
	// COMMIT in one round trip.
	fenced   bool
	atCommit []deferredExec
}

// FlushAtCommit runs now, in order, the statements queued in tx with ExecAtCommit: a statement
// that reads or changes what they write (the change feed's removal of torn-down changes) calls
// it first. Nothing for a transaction that queues nothing. Errors: the first failing
// statement's, interpreted under its op.
func FlushAtCommit(ctx context.Context, tx ports.Tx) error {
	t, ok := tx.(*Tx)
	if !ok || t == nil || len(t.atCommit) == 0 {
		return nil
	}
	queued := t.atCommit
	t.atCommit = nil
	b := &pgx.Batch{}
	for _, d := range queued {
		b.Queue(d.sql, d.args...)
	}
	br := t.tx.SendBatch(ctx, b)
	for _, d := range queued {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return pgutil.Interpret(d.op, err)
		}
	}
	return br.Close()
}

// deferredExec is a statement queued with ExecAtCommit.
type deferredExec struct {
	op, sql string
	args    []any
}

// ExecAtCommit queues sql to run in tx just before its commit-time recheck, in the round trip
// that commits (a step's change-feed publications travel with its COMMIT). It
// reports false for a transaction that cannot queue (unfenced, adopted, foreign): the caller
// then runs sql itself. A queued statement that fails rolls the whole transaction back, and
// its error, interpreted under op, is the transaction's. Only statements whose result nobody
// reads may be queued, and only when nothing later in the transaction reads what they write.
func ExecAtCommit(tx ports.Tx, op, sql string, args ...any) bool {
	if !CanExecAtCommit(tx) {
		return false
	}
	t := tx.(*Tx)
	t.atCommit = append(t.atCommit, deferredExec{op: op, sql: sql, args: args})
	return true
}

// CanExecAtCommit reports whether ExecAtCommit queues in tx (a fenced transaction of this
// inbox), for a caller that reads first to decide what it queues.
func CanExecAtCommit(tx ports.Tx) bool {
	t, ok := tx.(*Tx)
	return ok && t != nil && t.fenced
}

// AfterCommit registers fn to run once tx committed (never when it rolls back), on the
// goroutine that ran the transaction, after COMMIT returned. It is the post-commit callback
// of the seed: fn must not write provider state, and it must not block (the change feed uses
// it to wake this server's waiting readers). Errors: ErrForeignTx.
func AfterCommit(tx ports.Tx, fn func()) error {
	t, ok := tx.(*Tx)
	if !ok || t == nil || t.tx == nil {
		return fmt.Errorf("%w (%T)", ErrForeignTx, tx)
	}
	t.afterCommit = append(t.afterCommit, fn)
	return nil
}

// committed runs the callbacks of a transaction that committed.
func (t *Tx) committed() {
	for _, fn := range t.afterCommit {
		fn()
	}
}

// DeletesOwnEvent lets the commit-time recheck accept a missing event row: this transaction
// deletes its own delivery on purpose (an uninstall that erases the team's data).
func (t *Tx) DeletesOwnEvent() { t.deletesOwnEvent = true }

// PgxTx is how the other PostgreSQL adapters (the mirror stores) write through a transaction
// of the inbox: they receive a ports.Tx from the handler and run their statements on the
// pgx.Tx returned here. Commit and Rollback of the returned value fail with ErrTxOwnedByInbox,
// because a store that ended the transaction itself would skip the commit-time recheck; Begin
// (a savepoint) works as usual. Errors: ErrForeignTx.
func PgxTx(tx ports.Tx) (pgx.Tx, error) {
	t, ok := tx.(*Tx)
	if !ok || t == nil || t.tx == nil {
		return nil, fmt.Errorf("%w (%T)", ErrForeignTx, tx)
	}
	return ownedTx{t.tx}, nil
}

// Adopt lends tx, a transaction another PostgreSQL adapter owns, to a mirror store as a
// ports.Tx: person erasure runs each provider's declared erasure (ports.PersonDataStore) in
// its own pass transaction, which holds the copy fence. The owner commits or rolls back tx.
func Adopt(tx pgx.Tx) ports.Tx { return &Tx{tx: tx} }

// ownedTx is the inbox's transaction without its end.
type ownedTx struct{ pgx.Tx }

func (ownedTx) Commit(context.Context) error   { return ErrTxOwnedByInbox }
func (ownedTx) Rollback(context.Context) error { return ErrTxOwnedByInbox }

// Committed runs the after-commit callbacks of tx, a transaction lent with Adopt, once its
// owner committed it (a sync page's store: the change feed's in-process wake). Nothing for a
// transaction this adapter did not make.
func Committed(tx ports.Tx) {
	if t, ok := tx.(*Tx); ok && t != nil {
		t.committed()
	}
}

// connTx is the fenced transaction's pgx.Tx: the inbox sends BEGIN and COMMIT itself, batched
// with the fence statements, on this connection, so the transaction is the connection's.
// Begin opens a savepoint (as pgx's own transactions do); Commit and Rollback are the inbox's
// (the mirror stores receive it wrapped in ownedTx).
type connTx struct {
	conn *pgx.Conn
}

func (t connTx) Begin(ctx context.Context) (pgx.Tx, error) { return newSavepoint(ctx, t.conn, 1) }
func (connTx) Commit(context.Context) error                { return ErrTxOwnedByInbox }
func (connTx) Rollback(context.Context) error              { return ErrTxOwnedByInbox }
func (t connTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, table, cols, src)
}
func (t connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}
func (connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (t connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}
func (t connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}
func (t connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}
func (t connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}
func (t connTx) Conn() *pgx.Conn { return t.conn }

// savepoint is a nested transaction of a connTx.
type savepoint struct {
	connTx
	depth  int
	closed bool
}

func newSavepoint(ctx context.Context, conn *pgx.Conn, depth int) (pgx.Tx, error) {
	if _, err := conn.Exec(ctx, "SAVEPOINT sp_"+strconv.Itoa(depth)); err != nil {
		return nil, err
	}
	return &savepoint{connTx: connTx{conn: conn}, depth: depth}, nil
}

func (s *savepoint) Begin(ctx context.Context) (pgx.Tx, error) {
	return newSavepoint(ctx, s.conn, s.depth+1)
}

func (s *savepoint) Commit(ctx context.Context) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	s.closed = true
	_, err := s.conn.Exec(ctx, "RELEASE SAVEPOINT sp_"+strconv.Itoa(s.depth))
	return err
}

func (s *savepoint) Rollback(ctx context.Context) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	s.closed = true
	_, err := s.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT sp_"+strconv.Itoa(s.depth))
	return err
}
