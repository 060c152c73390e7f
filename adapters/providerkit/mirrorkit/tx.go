package mirrorkit

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Exec runs one statement in tx, the step's transaction, and returns how many rows it
// affected. Errors: sqlkit.ErrForeignTx, the statement's, interpreted under op.
func Exec(ctx context.Context, tx ports.Tx, op, sql string, args ...any) (int64, error) {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return 0, err
	}
	tag, err := ptx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, sqlkit.Interpret(op, err)
	}
	return tag.RowsAffected(), nil
}

// Batch runs one statement per row (stmt gives its SQL and parameters) in tx in one round
// trip, in the order given (callers sort by key, so row locks are taken in key order).
func Batch[T any](ctx context.Context, tx ports.Tx, op string, rows []T, stmt func(T) (string, []any)) error {
	if len(rows) == 0 {
		return nil
	}
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		sql, args := stmt(r)
		b.Queue(sql, args...)
	}
	return sqlkit.Interpret(op, ptx.SendBatch(ctx, b).Close())
}
