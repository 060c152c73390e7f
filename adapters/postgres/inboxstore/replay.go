package inboxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Replay implements ports.InboxStore. READ COMMITTED with FOR UPDATE on the row: a concurrent
// replay waits for this one and then reads the QUEUED row, so it refuses instead of replaying
// twice.
func (s *Store) Replay(ctx context.Context, workspaceID, id, accountID int64) (inbox.Delivery, error) {
	var replayed inbox.Delivery
	err := sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
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
			return sqlkit.Interpret(fmt.Sprintf("replay delivery %d", id), err)
		}
		d, err := replayLocked(ctx, tx, r, accountID, now)
		if err != nil {
			return err
		}
		if d.IsInstallation() {
			if _, err := tx.Exec(ctx, insertReplayAudit, id, accountID, d.ReplayedAt()); err != nil {
				return sqlkit.Interpret(fmt.Sprintf("audit replay of delivery %d", id), err)
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

// replayLocked applies the domain's Replay to the row r (locked FOR UPDATE by the caller) and
// writes it: the one transition single and bulk replay share. Errors: ErrConflict "not-dead"
// (wrapping *inbox.TransitionError) when r is not DEAD.
func replayLocked(ctx context.Context, tx pgx.Tx, r deliveryRow, accountID int64, now time.Time) (inbox.Delivery, error) {
	d, err := r.delivery()
	if err != nil {
		return inbox.Delivery{}, err
	}
	if err := d.Replay(accountID, now); err != nil {
		var transition *inbox.TransitionError
		if errors.As(err, &transition) {
			// The reason is the contract's 409 code; the transition stays in the chain.
			return inbox.Delivery{}, fmt.Errorf("replay delivery %d: %w: %w",
				r.id, ports.Reject(ports.ErrConflict, "not-dead", ""), transition)
		}
		return inbox.Delivery{}, fmt.Errorf("replay delivery %d: %w", r.id, err)
	}
	tag, err := tx.Exec(ctx, writeReplay, r.id, d.Attempt(), d.UnknownFailures(), d.DueAt(), d.ReplayedBy(), d.ReplayedAt())
	if err != nil {
		return inbox.Delivery{}, sqlkit.Interpret(fmt.Sprintf("replay delivery %d", r.id), err)
	}
	if tag.RowsAffected() != 1 {
		return inbox.Delivery{}, fmt.Errorf("replay delivery %d: row changed under its lock", r.id)
	}
	return d, nil
}

// ReplayDeadRows is bulk replay's step inside the caller's transaction (the replay job store's
// batch, adapters/postgres/replayjobs): of ids, the rows of workspace workspaceID (never an
// installation row) that are DEAD now are locked in id order and replayed exactly as Replay
// replays one, recording accountID and the time (now: nil is the database clock). A row that
// is no longer DEAD, or no longer stored, is left alone. It returns how many rows it replayed.
func ReplayDeadRows(ctx context.Context, tx pgx.Tx, workspaceID int64, ids []int64, accountID int64, now *time.Time) (int, error) {
	if workspaceID <= 0 {
		return 0, fmt.Errorf("replay rows: %w", ports.ErrMalformed)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	rows, err := tx.Query(ctx, lockDeadRowsOfWorkspaceForReplay, ids, workspaceID, now)
	if err != nil {
		return 0, sqlkit.Interpret("lock rows for replay", err)
	}
	type locked struct {
		row deliveryRow
		now time.Time
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (locked, error) {
		var l locked
		err := row.Scan(append(l.row.targets(), &l.now)...)
		return l, err
	})
	if err != nil {
		return 0, sqlkit.Interpret("lock rows for replay", err)
	}
	for _, l := range found {
		if _, err := replayLocked(ctx, tx, l.row, accountID, l.now); err != nil {
			return 0, err
		}
	}
	return len(found), nil
}
