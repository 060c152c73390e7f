package mirrorkit

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// WriteIndependent runs writes as WriteAll does, for writes of distinct rows whose views read
// only their own row (a push's commits): every reporting write travels in one round trip, then
// each changed row's view is read and its change published, in the order given. Without a
// publisher it is WriteAll.
func (f Feed[V]) WriteIndependent(ctx context.Context, tx ports.Tx, ws int64, writes []Write) error {
	if len(writes) < 2 || !f.On() {
		return f.WriteAll(ctx, tx, ws, writes)
	}
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	type report struct {
		changed, deleted bool
		version          string
	}
	reports := make([]report, len(writes))
	b := &pgx.Batch{}
	for _, w := range writes {
		b.Queue(w.SQL, w.Args...)
	}
	br := ptx.SendBatch(ctx, b)
	for i, w := range writes {
		r := &reports[i]
		err := br.QueryRow().Scan(&r.changed, &r.deleted, &r.version)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // lost to the version rule
		}
		if err != nil {
			_ = br.Close()
			return sqlkit.Interpret(w.Op, err)
		}
	}
	if err := br.Close(); err != nil {
		return sqlkit.Interpret(writes[0].Op, err)
	}
	for i, w := range writes {
		r := reports[i]
		if !r.changed {
			continue
		}
		if err := f.publishWritten(ctx, tx, ptx, ws, w, r.deleted, r.version); err != nil {
			return err
		}
	}
	return nil
}
