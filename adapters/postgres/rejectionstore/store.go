// Package rejectionstore keeps the rejection log (webhook_rejection, migration 00072) on
// PostgreSQL.
package rejectionstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// addCounts adds a flush's counts in one statement; a key another server, or an earlier flush of
// the same minute, added is summed, so a minute stays one row per key.
const addCounts = `
INSERT INTO webhook_rejection AS r (minute, provider, connection_id, reason, count)
SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
ON CONFLICT (minute, provider, connection_id, reason) DO UPDATE SET count = r.count + EXCLUDED.count`

const deleteOld = `DELETE FROM webhook_rejection WHERE minute < $1`

// A workspace sees the rows of its current connections (ix_webhook_rejection_connection);
// the instance administrator every row, along the primary key's minute order.
const (
	listOfWorkspace = `
SELECT r.minute, r.provider, r.connection_id, r.reason, r.count
FROM webhook_rejection r JOIN connection c ON c.id = r.connection_id
WHERE c.workspace_id = $1
ORDER BY r.minute DESC, r.provider, r.connection_id, r.reason
LIMIT $2 OFFSET $3`
	countOfWorkspace = `
SELECT count(*) FROM webhook_rejection r JOIN connection c ON c.id = r.connection_id WHERE c.workspace_id = $1`
	listAll = `
SELECT r.minute, r.provider, r.connection_id, r.reason, r.count
FROM webhook_rejection r
ORDER BY r.minute DESC, r.provider, r.connection_id, r.reason
LIMIT $1 OFFSET $2`
	countAll = `SELECT count(*) FROM webhook_rejection`
)

// Store is the PostgreSQL rejection log. It is safe for concurrent use.
type Store struct{ pool *pgxpool.Pool }

var _ ports.RejectionStore = (*Store)(nil)

// New returns a store on pool.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("rejectionstore: pool is required")
	}
	return &Store{pool: pool}, nil
}

// AddRejections implements ports.RejectionStore.
func (s *Store) AddRejections(ctx context.Context, counts []ports.RejectionCount, deleteBefore time.Time) error {
	n := len(counts)
	minutes, providers, conns, reasons, ns := make([]time.Time, n), make([]string, n), make([]int64, n), make([]string, n), make([]int64, n)
	for i, c := range counts {
		minutes[i], providers[i], conns[i], reasons[i], ns[i] = c.Minute, c.Provider, c.ConnectionID, c.Reason, c.Count
	}
	return sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if n > 0 {
			if _, err := tx.Exec(ctx, addCounts, minutes, providers, conns, reasons, ns); err != nil {
				return sqlkit.Interpret("add rejections", err)
			}
		}
		if deleteBefore.IsZero() {
			return nil
		}
		if _, err := tx.Exec(ctx, deleteOld, deleteBefore); err != nil {
			return sqlkit.Interpret("delete old rejections", err)
		}
		return nil
	})
}

// ListRejections implements ports.RejectionStore.
func (s *Store) ListRejections(ctx context.Context, workspaceID int64, page ports.PageRequest) ([]ports.RejectionCount, int, error) {
	var (
		items []ports.RejectionCount
		total int
	)
	err := sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		var (
			rows pgx.Rows
			err  error
		)
		if workspaceID == 0 {
			err = tx.QueryRow(ctx, countAll).Scan(&total)
		} else {
			err = tx.QueryRow(ctx, countOfWorkspace, workspaceID).Scan(&total)
		}
		if err != nil {
			return sqlkit.Interpret("count rejections", err)
		}
		if workspaceID == 0 {
			rows, err = tx.Query(ctx, listAll, page.Size, page.Offset())
		} else {
			rows, err = tx.Query(ctx, listOfWorkspace, workspaceID, page.Size, page.Offset())
		}
		if err != nil {
			return sqlkit.Interpret("list rejections", err)
		}
		items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.RejectionCount, error) {
			var c ports.RejectionCount
			err := row.Scan(&c.Minute, &c.Provider, &c.ConnectionID, &c.Reason, &c.Count)
			return c, err
		})
		return sqlkit.Interpret("list rejections", err)
	})
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}
