package inboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Reap implements ports.InboxStore. One READ COMMITTED transaction locks a batch of expired
// leases (skipping locked rows), lets the domain's Delivery.Expire decide each one against the
// time that judged the expiry (the database clock, or Config.Clock), and writes the decisions
// by id and epoch, with each expired lease's attempt (outcome lease-expired) in the same
// statement.
func (s *Store) Reap(ctx context.Context, policy inbox.RetryPolicy, limit int) ([]ports.Reaped, error) {
	return s.reap(ctx, limit, func(d *inbox.Delivery, now time.Time) (inbox.Decision, error) { return d.Expire(now, policy) })
}

// ReapAfterOutage implements ports.InboxStore: Reap, with Delivery.ExpireDuringOutage for the
// rows whose lease ran during outage.
func (s *Store) ReapAfterOutage(ctx context.Context, policy inbox.RetryPolicy, limit int, outage inbox.Outage) ([]ports.Reaped, error) {
	return s.reap(ctx, limit, func(d *inbox.Delivery, now time.Time) (inbox.Decision, error) {
		if outage.Covers(d.Lease()) {
			return d.ExpireDuringOutage(now)
		}
		return d.Expire(now, policy)
	})
}

func (s *Store) reap(ctx context.Context, limit int, expire func(d *inbox.Delivery, now time.Time) (inbox.Decision, error)) ([]ports.Reaped, error) {
	if limit <= 0 {
		return nil, nil
	}
	var reaped []ports.Reaped
	err := sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		reaped = reaped[:0]
		rows, err := tx.Query(ctx, selectExpiredLeases, limit, s.now())
		if err != nil {
			return sqlkit.Interpret("select expired leases", err)
		}
		type expired struct {
			d   inbox.Delivery
			now time.Time
		}
		var found []expired
		for rows.Next() {
			var (
				r   deliveryRow
				now time.Time
			)
			if err := rows.Scan(append(r.targets(), &now)...); err != nil {
				rows.Close()
				return sqlkit.Interpret("select expired leases", err)
			}
			d, err := r.delivery()
			if err != nil {
				rows.Close()
				return err
			}
			found = append(found, expired{d: d, now: now})
		}
		if err := rows.Err(); err != nil {
			return sqlkit.Interpret("select expired leases", err)
		}
		if len(found) == 0 {
			return nil
		}
		n := len(found)
		var (
			ids, epochs       = make([]int64, n), make([]int64, n)
			states            = make([]string, n)
			attempts, budgets = make([]int32, n), make([]int32, n)
			dueAts            = make([]time.Time, n)
			judgedAts         = make([]time.Time, n)
			endedAts          = make([]*time.Time, n)
			classes           = make([]*string, n)
		)
		for i, e := range found {
			d := e.d
			epoch := d.Lease().Epoch()
			dec, err := expire(&d, e.now)
			if err != nil {
				return fmt.Errorf("expire delivery %d: %w", d.ID(), err)
			}
			ids[i], epochs[i], states[i] = d.ID(), int64(epoch), d.State().String()
			attempts[i], budgets[i] = int32(d.Attempt()), int32(d.UnknownFailures())
			dueAts[i], endedAts[i], classes[i] = d.DueAt(), nullable(d.EndedAt()), nullable(d.ErrorClass())
			// An expiry counts the attempt, so the attempt after Expire is the lease's number.
			judgedAts[i] = e.now
			reaped = append(reaped, ports.Reaped{Delivery: d, Decision: dec})
		}
		if _, err := tx.Exec(ctx, writeExpiredLeases, ids, epochs, states, attempts, budgets, dueAts, endedAts, classes, judgedAts, attempts); err != nil {
			return sqlkit.Interpret("write expired leases", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return reaped, nil
}
