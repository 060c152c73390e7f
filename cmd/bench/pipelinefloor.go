package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// statementFloor adds, to each pipeline round, the floor of the handler's own statements (the
// earlier, per-statement pipeline floor), on stderr.
var statementFloor bool

// pipelineFloorBatch is the most rows one pipeline floor claim leases: its 8 claimers then hold
// at most 24 rows, as the server's consumer did before its claim-ahead went from 2 to 4 ×
// Claimers (8 + 32 = 40 now; that serves fast handlers, and a real handler's claimed-ahead rows
// only wait). Larger batches lease most of the 100 scopes at once and handle each batch
// serially, which makes the floor slower than the server it is the floor of.
const pipelineFloorBatch = 3

// floorRow is one delivery of a pipeline floor round as admission stores it.
type floorRow struct {
	provider, eventType, subject string
	payload, headers             []byte
}

// issuesFloorRows are the pipeline row's deliveries as admission stores them.
func issuesFloorRows() []floorRow {
	rows := make([]floorRow, 4*pipelineRepos)
	for i := range rows {
		rows[i] = floorRow{provider: "GITHUB", eventType: "issues",
			subject: fmt.Sprintf("github:repository:%d", repositoryID+i%pipelineRepos),
			payload: repoPayload(i+1, i%pipelineRepos), headers: []byte("{}")}
	}
	return rows
}

// pipelineFloorRound runs the statements the pipeline runs per delivery, and only those,
// straight into PostgreSQL at the pipeline's concurrency, for warm-up plus seconds: senders
// goroutines run the admission's row insert of rows (pausing at the same backlog watermarks as
// the pipeline's senders), and claimers goroutines run the store's claim (up to
// pipelineFloorBatch rows), the real handler of each row's event (GitHub `issues` for the
// pipeline row) with its steps, mirror upserts and change publication, wired as the server
// wires them (servedRegistry), and the store's outcome write for the claimed rows. No HTTP, no signatures, no consumer scheduling. The rate
// is the deliveries completed in the measured window over its length.
//
// With seed, the claimers run the commits the seed requires instead of the handler
// (seedCommits, `issues` rows only): the pipeline floor.
func pipelineFloorRound(ctx context.Context, dbURL string, pool *pgxpool.Pool, senders, claimers, seconds int, rows []floorRow, seed bool) (int, time.Duration, error) {
	if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
		return 0, 0, err
	}
	// The inserts go through a pool shaped as the server's admission pool (admissionstore's
	// size and settings): 32 inserting backends instead would take the claimers' share of the
	// database's cores, which the server's admission never does.
	insertPool, err := admissionstore.OpenPool(ctx, dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer insertPool.Close()
	var workspaceID int64
	if err := pool.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'bench'`).Scan(&workspaceID); err != nil {
		return 0, 0, err
	}
	store, err := inboxstore.New(pool, inboxstore.Config{})
	if err != nil {
		return 0, 0, err
	}
	reg, err := servedRegistry(pool)
	if err != nil {
		return 0, 0, err
	}
	var (
		key      atomic.Int64
		done     atomic.Int64
		busy     atomic.Int64
		paused   atomic.Bool
		stop     = make(chan struct{})
		firstErr error
		mu       sync.Mutex
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for range senders {
		wg.Go(func() {
			for !stopped() {
				if paused.Load() {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				i := int(key.Add(1))
				row := rows[i%len(rows)]
				if _, err := insertPool.Exec(ctx, `
INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, headers)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT DO NOTHING`, workspaceID, row.provider, row.eventType, fmt.Sprintf("floor-%d", i),
					fmt.Sprintf("ws:%d:%s", workspaceID, row.subject), row.subject, row.payload, row.headers); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	for range claimers {
		wg.Go(func() {
			for !stopped() {
				claimed, err := store.Claim(ctx, "pipeline-floor", pipelineFloorBatch, time.Minute)
				if err != nil {
					fail(err)
					return
				}
				if len(claimed) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				results := make([]ports.Result, 0, len(claimed))
				for _, c := range claimed {
					handler, ok := reg.Lookup(c.Delivery.Provider(), c.Delivery.EventType())
					if !ok {
						// No handler: the consumer completes the row (GitHub check_run).
						handler = ports.HandlerFunc(func(context.Context, ports.Dispatch) error { return nil })
					}
					// A fence that found the event row briefly held (another claimer's locking
					// scan on it while it rechecks) is contention: the handler runs again at
					// once, where the consumer would retry it after a short delay.
					var herr error
					for try := 0; try < 1000 && !seed; try++ {
						hctx := dispatch.BindDispatch(ctx, c)
						herr = handler.Handle(hctx, ports.Dispatch{Delivery: c.Delivery, WorkspaceID: c.Delivery.WorkspaceID(),
							Payload: c.Payload, Headers: c.Headers})
						if herr = dispatch.FenceRejectionsFrom(hctx).Verdict(herr); !errors.Is(herr, inbox.ErrBusy) {
							break
						}
						busy.Add(1)
					}
					if seed {
						herr = seedCommits(ctx, pool, c)
					}
					if herr != nil {
						fail(fmt.Errorf("handler: %w", herr))
						return
					}
					results = append(results, ports.Result{
						Ack:      ports.Ack{ID: c.Delivery.ID(), Epoch: c.Delivery.Lease().Epoch()},
						Decision: inbox.Completed(),
					})
				}
				if _, err := store.Record(ctx, results); err != nil {
					fail(err)
					return
				}
				done.Add(int64(len(results)))
			}
		})
	}
	start := time.Now()
	var windowStart time.Time
	var before int64
	tick := time.NewTicker(200 * time.Millisecond)
	for time.Since(start) < pipelineWarmup+time.Duration(seconds)*time.Second {
		<-tick.C
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		if windowStart.IsZero() && time.Since(start) >= pipelineWarmup {
			windowStart, before = time.Now(), done.Load()
		}
		backlog, err := backlogOf(ctx, pool)
		if err != nil {
			fail(err)
			break
		}
		switch {
		case backlog > pipelineHigh:
			paused.Store(true)
		case backlog < pipelineLow:
			paused.Store(false)
		}
	}
	tick.Stop()
	n, elapsed := int(done.Load()-before), time.Since(windowStart)
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	fmt.Fprintf(os.Stderr, "  pipeline floor: %d deliveries in the window, %d handler runs found a fence busy\n", n, busy.Load())
	return n, elapsed, nil
}
