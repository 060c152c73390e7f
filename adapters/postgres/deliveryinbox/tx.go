package deliveryinbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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
