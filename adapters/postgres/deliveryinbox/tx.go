package deliveryinbox

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// connTx is the fenced transaction's pgx.Tx: the inbox sends BEGIN and COMMIT itself, batched
// with the fence statements, on this connection, so the transaction is the connection's.
// Begin opens a savepoint (as pgx's own transactions do); Commit and Rollback are the inbox's
// (the mirror stores receive it through sqlkit.PgxTx, without its end).
type connTx struct {
	conn *pgx.Conn
}

func (t connTx) Begin(ctx context.Context) (pgx.Tx, error) { return newSavepoint(ctx, t.conn, 1) }
func (connTx) Commit(context.Context) error                { return sqlkit.ErrTxOwnedByInbox }
func (connTx) Rollback(context.Context) error              { return sqlkit.ErrTxOwnedByInbox }
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
