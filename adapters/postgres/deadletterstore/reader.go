// Package deadletters implements ports.DeadLetterReader on PostgreSQL: the operator's reads of
// DEAD rows and of a workspace's inbox. Replay is not here: it is a state transition of the
// inbox, which ports.InboxStore.Replay owns (with the installation audit in its transaction).
package deadletterstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Reader is the PostgreSQL dead-letter reader. It is safe for concurrent use.
type Reader struct {
	pool *pgxpool.Pool
}

var _ ports.DeadLetterReader = (*Reader)(nil)

// New returns a reader on pool.
func New(pool *pgxpool.Pool) (*Reader, error) {
	if pool == nil {
		return nil, errors.New("deadletters: pool is required")
	}
	return &Reader{pool: pool}, nil
}

// snapshot is the read-only REPEATABLE READ transaction of a page or an overview: the count and
// the rows (or the three overview reads) come from one snapshot, so total and items agree.
var snapshot = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// ListDead implements ports.DeadLetterReader.
func (r *Reader) ListDead(ctx context.Context, workspaceID int64, filter ports.DeadLetterFilter, page ports.PageRequest) ([]inbox.Delivery, int, error) {
	if workspaceID < 0 || page.Page < 0 || page.Size < 1 {
		return nil, 0, fmt.Errorf("list dead letters: %w", ports.ErrMalformed)
	}
	var (
		items []inbox.Delivery
		total int
	)
	err := sqlkit.WithTx(ctx, r.pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		var (
			rows pgx.Rows
			err  error
		)
		if workspaceID == 0 {
			err = tx.QueryRow(ctx, countDeadOfInstallation, filter.Provider, filter.EventType, filter.ErrorClass).Scan(&total)
		} else {
			err = tx.QueryRow(ctx, countDeadOfWorkspace, workspaceID, filter.Provider, filter.EventType, filter.ErrorClass).Scan(&total)
		}
		if err != nil {
			return sqlkit.Interpret("count dead letters", err)
		}
		if workspaceID == 0 {
			rows, err = tx.Query(ctx, listDeadOfInstallation, page.Size, page.Offset(), filter.Provider, filter.EventType, filter.ErrorClass)
		} else {
			rows, err = tx.Query(ctx, listDeadOfWorkspace, workspaceID, page.Size, page.Offset(), filter.Provider, filter.EventType, filter.ErrorClass)
		}
		if err != nil {
			return sqlkit.Interpret("list dead letters", err)
		}
		items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (inbox.Delivery, error) {
			var d deadRow
			if err := row.Scan(d.targets()...); err != nil {
				return inbox.Delivery{}, err
			}
			return d.delivery(), nil
		})
		return sqlkit.Interpret("list dead letters", err)
	})
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

// DeadLetter implements ports.DeadLetterReader.
func (r *Reader) DeadLetter(ctx context.Context, workspaceID, id int64) (ports.DeadLetter, error) {
	if workspaceID < 0 {
		return ports.DeadLetter{}, fmt.Errorf("dead letter: %w", ports.ErrNotFound)
	}
	var (
		d       deadRow
		payload []byte
		headers map[string]string
		row     pgx.Row
	)
	if workspaceID == 0 {
		row = r.pool.QueryRow(ctx, deadLetterOfInstallation, id)
	} else {
		row = r.pool.QueryRow(ctx, deadLetterOfWorkspace, id, workspaceID)
	}
	if err := row.Scan(append(d.targets(), &payload, &headers)...); err != nil {
		return ports.DeadLetter{}, sqlkit.Interpret(fmt.Sprintf("dead letter %d", id), err)
	}
	if headers == nil {
		headers = map[string]string{}
	}
	return ports.DeadLetter{Delivery: d.delivery(), Payload: json.RawMessage(payload), Headers: headers}, nil
}

// Overview implements ports.DeadLetterReader.
func (r *Reader) Overview(ctx context.Context, workspaceID int64, busiest int) (ports.InboxOverview, error) {
	if workspaceID < 0 || busiest < 0 {
		return ports.InboxOverview{}, fmt.Errorf("inbox overview: %w", ports.ErrMalformed)
	}
	q := [3]string{countByStateOfWorkspace, oldestQueuedAgeOfWorkspace, busiestScopesOfWorkspace}
	args := []any{workspaceID}
	estimate := fmt.Sprintf(estimateDoneOfWorkspace, workspaceID)
	if workspaceID == 0 {
		q = [3]string{countByStateOfInstallation, oldestQueuedAgeOfInstallation, busiestScopesOfInstallation}
		args = nil
		estimate = estimateDoneOfInstallation
	}
	o := ports.InboxOverview{Counts: make(map[inbox.State]int64, 4), BusiestScopes: []ports.ScopeBacklog{}}
	err := sqlkit.WithTx(ctx, r.pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, pinOverviewPlan); err != nil {
			return sqlkit.Interpret("count inbox rows", err)
		}
		var queued, leased, dead, done int64
		if err := tx.QueryRow(ctx, q[0], append(args, DoneCountedUpTo)...).Scan(&queued, &leased, &dead, &done); err != nil {
			return sqlkit.Interpret("count inbox rows", err)
		}
		if done > DoneCountedUpTo {
			estimated, err := plannedRows(ctx, tx, estimate)
			if err != nil {
				return err
			}
			done = max(done, estimated)
			o.Estimated = []inbox.State{inbox.Done}
		}
		o.Counts[inbox.Queued], o.Counts[inbox.Leased], o.Counts[inbox.Dead], o.Counts[inbox.Done] = queued, leased, dead, done

		var age float64
		if err := tx.QueryRow(ctx, q[1], args...).Scan(&age); err != nil {
			return sqlkit.Interpret("oldest queued row", err)
		}
		if age > 0 && age < math.MaxInt64/float64(time.Second) {
			o.OldestQueuedAge = time.Duration(age * float64(time.Second))
		}

		rows, err := tx.Query(ctx, q[2], append(args, busiest)...)
		if err != nil {
			return sqlkit.Interpret("busiest scopes", err)
		}
		scopes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.ScopeBacklog, error) {
			var b ports.ScopeBacklog
			err := row.Scan(&b.ScopeKey, &b.Queued)
			return b, err
		})
		if err != nil {
			return sqlkit.Interpret("busiest scopes", err)
		}
		o.BusiestScopes = append(o.BusiestScopes, scopes...)
		return nil
	})
	if err != nil {
		return ports.InboxOverview{}, err
	}
	return o, nil
}

// DoneCountedUpTo is how many DONE rows of a workspace the overview counts exactly; beyond it
// the DONE count is the planner's estimate and the overview says so (InboxOverview.Estimated).
const DoneCountedUpTo = 10_000

// plannedRows is the planner's row estimate of query (an EXPLAIN (FORMAT JSON)): it reads the
// statistics, not the rows.
func plannedRows(ctx context.Context, tx pgx.Tx, query string) (int64, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := tx.QueryRow(ctx, query).Scan(&plan); err != nil {
		return 0, sqlkit.Interpret("estimate done rows", err)
	}
	if len(plan) == 0 {
		return 0, errors.New("estimate done rows: no plan")
	}
	return int64(plan[0].Plan.Rows), nil
}

// deadRow holds deadColumns as scanned.
type deadRow struct {
	id              int64
	workspaceID     *int64
	provider        string
	eventType       string
	deliveryKey     string
	subject         string
	scopeKey        string
	attempt         int32
	unknownFailures int32
	leaseEpoch      int64
	dueAt           time.Time
	receivedAt      time.Time
	endedAt         *time.Time
	errorClass      *string
}

func (d *deadRow) targets() []any {
	return []any{&d.id, &d.workspaceID, &d.provider, &d.eventType, &d.deliveryKey, &d.subject, &d.scopeKey,
		&d.attempt, &d.unknownFailures, &d.leaseEpoch, &d.dueAt, &d.receivedAt, &d.endedAt, &d.errorClass}
}

// delivery restores the DEAD delivery, skipping creation-time checks.
func (d *deadRow) delivery() inbox.Delivery {
	s := inbox.Stored{
		ID: d.id, Provider: provider.Restore(d.provider), EventType: d.eventType, DeliveryKey: d.deliveryKey,
		Subject: d.subject, ScopeKey: d.scopeKey, State: inbox.Dead, Attempt: int(d.attempt),
		UnknownFailures: int(d.unknownFailures), LeaseEpoch: inbox.Epoch(d.leaseEpoch),
		DueAt: d.dueAt, ReceivedAt: d.receivedAt,
	}
	if d.workspaceID != nil {
		s.WorkspaceID = *d.workspaceID
	}
	if d.endedAt != nil {
		s.EndedAt = *d.endedAt
	}
	if d.errorClass != nil {
		s.ErrorClass = *d.errorClass
	}
	return inbox.RestoreDelivery(s)
}

// Activity implements ports.DeadLetterReader.
func (r *Reader) Activity(ctx context.Context, workspaceID int64, limit int) (ports.Activity, error) {
	if workspaceID <= 0 || limit < 1 {
		return ports.Activity{}, fmt.Errorf("inbox activity: %w", ports.ErrMalformed)
	}
	rows, err := r.pool.Query(ctx, activityOfWorkspace, workspaceID, limit)
	if err != nil {
		return ports.Activity{}, sqlkit.Interpret("inbox activity", err)
	}
	var (
		out   ports.Activity
		total int64
	)
	out.Minutes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.MinuteActivity, error) {
		var m ports.MinuteActivity
		err := row.Scan(&m.Minute, &m.Handled, &m.Failed)
		total += m.Handled + m.Failed
		return m, err
	})
	if err != nil {
		return ports.Activity{}, sqlkit.Interpret("inbox activity", err)
	}
	out.Capped = total >= int64(limit)
	return out, nil
}
