package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Replay implements ports.InboxStore. READ COMMITTED with FOR UPDATE on the row: a concurrent
// replay waits for this one and then reads the QUEUED row, so it refuses instead of replaying
// twice.
func (s *Store) Replay(ctx context.Context, workspaceID, id, accountID int64) (inbox.Delivery, error) {
	var replayed inbox.Delivery
	err := pgutil.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		var (
			r   deliveryRow
			now time.Time
			row pgx.Row
		)
		if workspaceID == 0 {
			row = tx.QueryRow(ctx, lockInstallationRowForReplay, id, s.now())
		} else {
			row = tx.QueryRow(ctx, lockWorkspaceRowForReplay, id, workspaceID, s.now())
		}
		if err := row.Scan(append(r.targets(), &now)...); err != nil {
			return pgutil.Interpret(fmt.Sprintf("replay delivery %d", id), err)
		}
		d, err := r.delivery()
		if err != nil {
			return err
		}
		if err := d.Replay(accountID, now); err != nil {
			var transition *inbox.TransitionError
			if errors.As(err, &transition) {
				// The reason is the contract's 409 code; the transition stays in the chain.
				return fmt.Errorf("replay delivery %d: %w: %w",
					id, ports.Reject(ports.ErrConflict, "not-dead", ""), transition)
			}
			return fmt.Errorf("replay delivery %d: %w", id, err)
		}
		tag, err := tx.Exec(ctx, writeReplay, id, d.Attempt(), d.UnknownFailures(), d.DueAt(), d.ReplayedBy(), d.ReplayedAt())
		if err != nil {
			return pgutil.Interpret(fmt.Sprintf("replay delivery %d", id), err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("replay delivery %d: row changed under its lock", id)
		}
		if d.IsInstallation() {
			if _, err := tx.Exec(ctx, insertReplayAudit, id, accountID, d.ReplayedAt()); err != nil {
				return pgutil.Interpret(fmt.Sprintf("audit replay of delivery %d", id), err)
			}
		}
		replayed = d
		return nil
	})
	if err != nil {
		return inbox.Delivery{}, err
	}
	return replayed, nil
}
