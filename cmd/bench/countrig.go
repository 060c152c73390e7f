package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// countRig is the count phase's database: the traced one-connection pool the measured path
// runs on, an untraced connection beside it for the measurement itself, and the server's inbox
// store and handlers on the traced pool.
type countRig struct {
	ctx         context.Context
	pool, side  *pgxpool.Pool
	tracer      *countTracer
	store       *inboxstore.Store
	handlers    *consumer.Registry
	workspaceID int64
	verbose     bool
	serial      int // delivery keys admitted so far
}

// countRow is one delivery as admission stores it.
type countRow struct {
	provider, eventType, subject, scopeKey string
	payload, headers                       []byte
}

// newCountRig opens the traced pool on dbURL (migrated and seeded) and wires the inbox store
// and the handlers on it as bootstrap does (servedRegistry).
func newCountRig(ctx context.Context, dbURL string, verbose bool) (*countRig, func(), error) {
	r := &countRig{ctx: ctx, tracer: &countTracer{}, verbose: verbose}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns, cfg.MinConns = 1, 1
	cfg.ConnConfig.Tracer = r.tracer
	if r.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, nil, err
	}
	if r.side, err = openPool(ctx, dbURL, 1); err != nil {
		r.pool.Close()
		return nil, nil, err
	}
	closeAll := func() { r.side.Close(); r.pool.Close() }
	if r.store, err = inboxstore.New(r.pool, inboxstore.Config{}); err != nil {
		closeAll()
		return nil, nil, err
	}
	if r.handlers, err = servedRegistry(r.pool); err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := r.side.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'bench'`).Scan(&r.workspaceID); err != nil {
		closeAll()
		return nil, nil, err
	}
	return r, closeAll, nil
}

func (r *countRig) walLSN() (int64, error) {
	var n int64
	err := r.side.QueryRow(r.ctx, `SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn`).Scan(&n)
	return n, err
}

// rowsWritten is the database's inserted, updated and deleted tuples so far, after the traced
// connection flushed its statistics (pg_stat_force_next_flush: at its next idle).
func (r *countRig) rowsWritten() (int64, error) {
	r.tracer.mu.Lock()
	r.tracer.off = true
	r.tracer.mu.Unlock()
	defer func() {
		r.tracer.mu.Lock()
		r.tracer.off = false
		r.tracer.mu.Unlock()
	}()
	if _, err := r.pool.Exec(r.ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		return 0, err
	}
	var last, n int64 = -1, 0
	for range 50 { // until two readings agree: the flush happens as the backend goes idle
		time.Sleep(20 * time.Millisecond)
		if err := r.side.QueryRow(r.ctx, `SELECT tup_inserted + tup_updated + tup_deleted
			FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			return 0, err
		}
		if n == last {
			break
		}
		last = n
	}
	return n, nil
}

// measure counts what fn sends for items deliveries.
func (r *countRig) measure(name string, items int, fn func() error) (countPart, error) {
	r0, err := r.rowsWritten()
	if err != nil {
		return countPart{}, err
	}
	r.tracer.take()
	w0, err := r.walLSN()
	if err != nil {
		return countPart{}, err
	}
	db0, _ := databaseCPU(r.ctx, r.side)
	cpu0 := selfCPU()
	start := time.Now()
	if err := fn(); err != nil {
		return countPart{}, fmt.Errorf("%s: %w", name, err)
	}
	elapsed := time.Since(start)
	cpu1 := selfCPU()
	db1, _ := databaseCPU(r.ctx, r.side)
	w1, err := r.walLSN()
	if err != nil {
		return countPart{}, err
	}
	t, sqls := r.tracer.take()
	r1, err := r.rowsWritten()
	if err != nil {
		return countPart{}, err
	}
	t.RowsWritten = int(r1 - r0)
	t.WALBytes = w1 - w0
	t.Micros = float64(elapsed.Microseconds())
	t.DatabaseCPUMicros, t.ClientCPUMicros = float64((db1 - db0).Microseconds()), float64((cpu1 - cpu0).Microseconds())
	p := countPart{Name: name, Batch: items, PerItem: t}
	if r.verbose {
		p.Examples = sqls
	}
	return p, nil
}

// countPartsOfCycle are the parts a cycle measures, in order.
var countPartsOfCycle = []string{"admission insert", "claim (one batch)", "handler (fenced transactions)", "outcome (one batch)"}

// cycle admits rows (one per scope, so one claim leases them all), claims them in one
// statement, handles each with its event's handler (none: the consumer completes the row) and
// records their outcomes at once. With firstOnly the admission's and the handler's Examples are
// the statements of the first delivery alone.
func (r *countRig) cycle(label string, rows []countRow, firstOnly bool) ([]countPart, error) {
	parts := make([]countPart, 0, len(countPartsOfCycle))
	admit, err := r.measure(label+": "+countPartsOfCycle[0], len(rows), func() error {
		for _, row := range rows {
			r.serial++
			if _, err := r.pool.Exec(r.ctx, `
INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, headers)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.workspaceID, row.provider, row.eventType, fmt.Sprintf("count-%d", r.serial),
				row.scopeKey, row.subject, row.payload, row.headers); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if firstOnly && len(admit.Examples) > 1 {
		admit.Examples = admit.Examples[:1]
	}
	parts = append(parts, admit)
	var claimed []ports.Claimed
	claim, err := r.measure(label+": "+countPartsOfCycle[1], len(rows), func() error {
		claimed, err = r.store.Claim(r.ctx, "count", len(rows), time.Minute)
		if err == nil && len(claimed) != len(rows) {
			err = fmt.Errorf("claimed %d of %d", len(claimed), len(rows))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	parts = append(parts, claim)
	firstEnd := 0
	handle, err := r.measure(label+": "+countPartsOfCycle[2], len(rows), func() error {
		for i, c := range claimed {
			handler, ok := r.handlers.Lookup(c.Delivery.Provider(), c.Delivery.EventType())
			if ok {
				hctx := dispatch.BindDispatch(r.ctx, c)
				herr := handler.Handle(hctx, ports.Dispatch{Delivery: c.Delivery, WorkspaceID: c.Delivery.WorkspaceID(),
					Payload: c.Payload, Headers: c.Headers})
				if herr = dispatch.FenceRejectionsFrom(hctx).Verdict(herr); herr != nil {
					return herr
				}
			}
			if i == 0 {
				firstEnd = r.tracer.statementsSoFar()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if firstOnly && len(handle.Examples) >= firstEnd {
		handle.Examples = handle.Examples[:firstEnd]
	}
	parts = append(parts, handle)
	outcome, err := r.measure(label+": "+countPartsOfCycle[3], len(rows), func() error {
		results := make([]ports.Result, len(claimed))
		for i, c := range claimed {
			results[i] = ports.Result{Ack: ports.Ack{ID: c.Delivery.ID(), Epoch: c.Delivery.Lease().Epoch()}, Decision: inbox.Completed()}
		}
		_, err := r.store.Record(r.ctx, results)
		return err
	})
	if err != nil {
		return nil, err
	}
	return append(parts, outcome), nil
}

// cycles runs warm-up uncounted cycles and then n counted ones of the rows batch(c) gives
// (cycle c, warm-ups first), and sums the counted cycles' parts.
func (r *countRig) cycles(label string, warmups, n int, batch func(c int) []countRow, firstOnly bool) ([]countPart, error) {
	var sum []countPart
	for c := range warmups + n {
		parts, err := r.cycle(label, batch(c), firstOnly)
		if err != nil {
			return nil, err
		}
		switch {
		case c < warmups:
		case sum == nil:
			sum = parts
		default:
			for i := range parts {
				sum[i].PerItem = sum[i].PerItem.plus(parts[i].PerItem)
				sum[i].Batch += parts[i].Batch
			}
		}
	}
	return sum, nil
}
