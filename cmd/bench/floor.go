package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type dispatchFloorResult struct {
	Clients   int     `json:"clients"`
	PerSecond float64 `json:"perSecond"`
}

// floorBatch is how many scope heads one floor claim leases: the consumer's default ClaimBatch.
const floorBatch = 32

// floorClientCounts are the client counts the dispatch floor is probed at; the best is kept.
var floorClientCounts = []int{1, 2, 4}

// dispatchFloorRound drains a pre-filled inbox of rows over scopes with the store's own claim
// and outcome statements and nothing else: clients loops, each claiming up to floorBatch heads
// of distinct free scopes in one statement and writing their DONE outcomes in one statement,
// until nothing is left. No handler, no consumer: the limit of dispatch on this database.
func dispatchFloorRound(ctx context.Context, pool *pgxpool.Pool, rows, scopes, clients int) (time.Duration, error) {
	if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
		return 0, err
	}
	if err := prefill(ctx, pool, rows, scopes); err != nil {
		return 0, fmt.Errorf("prefill: %w", err)
	}
	store, err := inboxstore.New(pool, inboxstore.Config{})
	if err != nil {
		return 0, err
	}
	var (
		mu       sync.Mutex
		drained  int
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			idle := 0
			for {
				mu.Lock()
				left := rows - drained
				failed := firstErr != nil
				mu.Unlock()
				if left <= 0 || failed {
					return
				}
				claimed, err := store.Claim(ctx, "floor", floorBatch, time.Minute)
				if err == nil && len(claimed) > 0 {
					results := make([]ports.Result, len(claimed))
					for i, c := range claimed {
						results[i] = ports.Result{Ack: ports.Ack{ID: c.Delivery.ID(), Epoch: c.Delivery.Lease().Epoch()}, Decision: inbox.Completed()}
					}
					_, err = store.Record(ctx, results)
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				if len(claimed) == 0 {
					// Every free scope is leased by the other clients: try again at once, a
					// few times, as a claimer woken by their outcomes would.
					if idle++; idle > 100000 {
						mu.Lock()
						firstErr = fmt.Errorf("floor claims found nothing with %d rows left", left)
						mu.Unlock()
						return
					}
					continue
				}
				idle = 0
				mu.Lock()
				drained += len(claimed)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	return elapsed, nil
}

// benchDispatchAndFloor measures the dispatch and dispatch floor rows. The floor is probed with
// a short drain at each of floorClientCounts and the best count is kept; then the two rows
// alternate in rounds over the same pre-filled inbox (rows/rounds rows a round), so both see
// the same machine. Each rate is its rows over its summed time.
func benchDispatchAndFloor(ctx context.Context, dbURL string, rows, scopes, claimers, rounds int) (dispatchResult, dispatchFloorResult, error) {
	pool, err := openPool(ctx, dbURL, int32(max(floorClientCounts[len(floorClientCounts)-1], 4)+2))
	if err != nil {
		return dispatchResult{}, dispatchFloorResult{}, err
	}
	defer pool.Close()
	perRound := rows / rounds
	best, bestRate := 0, 0.0
	for _, n := range floorClientCounts {
		probe := min(perRound, 10000)
		d, err := dispatchFloorRound(ctx, pool, probe, scopes, n)
		if err != nil {
			return dispatchResult{}, dispatchFloorResult{}, fmt.Errorf("dispatch floor probe, %d clients: %w", n, err)
		}
		rate := float64(probe) / d.Seconds()
		fmt.Fprintf(os.Stderr, "  floor probe: %d clients %.0f rows/s\n", n, rate)
		if rate > bestRate {
			best, bestRate = n, rate
		}
	}
	var (
		dispatchTime, floorTime time.Duration
		d                       = dispatchResult{Rows: perRound * rounds, Scopes: scopes, Claimers: claimers}
	)
	for round := 1; round <= rounds; round++ {
		db0, dbOK := databaseCPU(ctx, pool)
		r, err := dispatchInChild(ctx, dbURL, perRound, scopes, claimers, 0)
		if err != nil {
			return dispatchResult{}, dispatchFloorResult{}, err
		}
		// The child's backends end (and are reaped into the postmaster's children's time)
		// just after the child does: give them a moment before the reading.
		time.Sleep(200 * time.Millisecond)
		db1, _ := databaseCPU(ctx, pool)
		go0 := selfCPU()
		f, err := dispatchFloorRound(ctx, pool, perRound, scopes, best)
		if err != nil {
			return dispatchResult{}, dispatchFloorResult{}, fmt.Errorf("dispatch floor: %w", err)
		}
		go1 := selfCPU()
		db2, _ := databaseCPU(ctx, pool)
		floorRate := float64(perRound) / f.Seconds()
		fmt.Fprintf(os.Stderr, "  round %d: dispatch %.0f rows/s (peak RSS %.0f MiB), floor (%d clients) %.0f rows/s, ratio %.2f\n",
			round, r.PerSecond, float64(r.PeakRssBytes)/(1<<20), best, floorRate, r.PerSecond/floorRate)
		if dbOK {
			// CPU per row, prefill included on both sides (the same COPY and ANALYZE).
			perRow := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(perRound) }
			fmt.Fprintf(os.Stderr, "    CPU µs per row: dispatch database %.0f, consumer %.0f; floor database %.0f, client %.0f\n",
				perRow(db1-db0), perRow(r.cpu), perRow(db2-db1), perRow(go1-go0))
		}
		dispatchTime += time.Duration(float64(perRound) / r.PerSecond * float64(time.Second))
		floorTime += f
		d.OrderViolations += r.OrderViolations
		d.PeakRssBytes = max(d.PeakRssBytes, r.PeakRssBytes)
	}
	d.PerSecond = float64(d.Rows) / dispatchTime.Seconds()
	return d, dispatchFloorResult{Clients: best, PerSecond: float64(d.Rows) / floorTime.Seconds()}, nil
}
