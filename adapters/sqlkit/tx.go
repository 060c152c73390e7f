package sqlkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.Tx = (*Tx)(nil)

// ErrForeignTx is returned by PgxTx for a ports.Tx no PostgreSQL adapter opened (an in-memory
// fake, a nil value): a PostgreSQL mirror store cannot write through it.
var ErrForeignTx = errors.New("transaction was not opened by the PostgreSQL delivery inbox")

// ErrTxOwnedByInbox is returned by Commit and Rollback of the transaction PgxTx hands out.
var ErrTxOwnedByInbox = errors.New("the delivery inbox owns this transaction's commit and rollback")

// Tx is the write transaction the delivery inbox (adapters/postgres/deliveryinbox) hands to a
// handler's step, and that the mirror stores write through (PgxTx). Like the pgx.Tx inside it,
// it belongs to the goroutine that runs the step and ends when the step returns.
type Tx struct {
	tx              pgx.Tx
	deletesOwnEvent bool
	afterCommit     []func()
	// fenced: a fenced transaction of the inbox, which sends atCommit with its recheck and
	// COMMIT in one round trip.
	fenced   bool
	atCommit []Queued
}

// Queued is a statement queued with ExecAtCommit: its op (for the interpreted error), SQL and
// arguments.
type Queued struct {
	Op, SQL string
	Args    []any
}

// FencedTx makes the fenced transaction of the delivery inbox over tx, whose BEGIN and COMMIT
// the inbox sends itself: ExecAtCommit queues in it, and the inbox sends what it queued
// (AtCommit) with its commit-time recheck.
func FencedTx(tx pgx.Tx) *Tx { return &Tx{tx: tx, fenced: true} }

// AtCommit returns the statements queued in t with ExecAtCommit, in order.
func (t *Tx) AtCommit() []Queued { return t.atCommit }

// OwnEventDeleted reports whether the step called DeletesOwnEvent.
func (t *Tx) OwnEventDeleted() bool { return t.deletesOwnEvent }

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
		b.Queue(d.SQL, d.Args...)
	}
	br := t.tx.SendBatch(ctx, b)
	for _, d := range queued {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return Interpret(d.Op, err)
		}
	}
	return br.Close()
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
	t.atCommit = append(t.atCommit, Queued{Op: op, SQL: sql, Args: args})
	return true
}

// CanExecAtCommit reports whether ExecAtCommit queues in tx (a fenced transaction of the
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

// DeletesOwnEvent lets the commit-time recheck accept a missing event row: this transaction
// deletes its own delivery on purpose (an uninstall that erases the team's data).
func (t *Tx) DeletesOwnEvent() { t.deletesOwnEvent = true }

// PgxTx is how the PostgreSQL adapters (the mirror stores) write through a transaction of the
// inbox: they receive a ports.Tx from the handler and run their statements on the pgx.Tx
// returned here. Commit and Rollback of the returned value fail with ErrTxOwnedByInbox,
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
// ports.Tx: person erasure runs each provider's declared erasure (contract.PersonDataStore) in
// its own pass transaction, which holds the copy fence; the inbox's unfenced transactions are
// adopted too. The owner commits or rolls back tx.
func Adopt(tx pgx.Tx) ports.Tx { return &Tx{tx: tx} }

// ownedTx is the inbox's transaction without its end.
type ownedTx struct{ pgx.Tx }

func (ownedTx) Commit(context.Context) error   { return ErrTxOwnedByInbox }
func (ownedTx) Rollback(context.Context) error { return ErrTxOwnedByInbox }

// Committed runs the after-commit callbacks of tx once its owner committed it (a sync page's
// store: the change feed's in-process wake). Nothing for a transaction no PostgreSQL adapter
// made.
func Committed(tx ports.Tx) {
	if t, ok := tx.(*Tx); ok && t != nil {
		for _, fn := range t.afterCommit {
			fn()
		}
	}
}
