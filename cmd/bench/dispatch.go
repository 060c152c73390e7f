package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// runDispatchChild pre-fills rows over scopes, runs the real consumer with a no-op handler
// until every row is DONE, and prints its figures as JSON on stdout. With hotRows, one more
// scope (the hot scope) first gets a head that failed and waits an hour for its retry, and
// hotRows QUEUED rows behind it, which no claim may take.
func runDispatchChild(ctx context.Context, dbURL string, rows, scopes, claimers, hotRows int) error {
	pool, err := openPool(ctx, dbURL, int32(claimers+8))
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
		return err
	}
	if hotRows > 0 {
		if err := prefillHotScope(ctx, pool, hotRows); err != nil {
			return fmt.Errorf("prefill hot scope: %w", err)
		}
	}
	if err := prefill(ctx, pool, rows, scopes); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}

	// The handler records, per scope, the row ids in the order it was called for them, and
	// closes allHandled when it has seen rows calls.
	var (
		mu         sync.Mutex
		calls      int
		allHandled = make(chan struct{})
	)
	seen := make(map[string][]int64, scopes)
	reg := consumer.NewRegistry()
	reg.Register(github.Provider, "issues", ports.HandlerFunc(func(_ context.Context, d ports.Dispatch) error {
		mu.Lock()
		seen[d.Delivery.Scope().String()] = append(seen[d.Delivery.Scope().String()], d.Delivery.ID())
		if calls++; calls == rows {
			close(allHandled)
		}
		mu.Unlock()
		return nil
	}))
	pgStore, err := inboxstore.New(pool, inboxstore.Config{})
	if err != nil {
		return err
	}
	store := &timedStore{InboxStore: pgStore}
	c, err := consumer.New(consumer.Config{Owner: "bench", Claimers: claimers, ClaimLoops: claimLoops, ClaimAhead: claimAhead, PollInterval: 50 * time.Millisecond},
		store, reg, consumer.NewSignal(), systemClock{}, zap.NewNop().Sugar(), telemetry.NewMetrics())
	if err != nil {
		return err
	}

	if dispatchProfile != "" {
		f, err := os.Create(dispatchProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- c.Run(runCtx) }()
	// The run ends when the handler has seen every row and no lease is left, i.e. the last
	// outcomes are written. Until the handler is done nothing is asked of the database, so the
	// measurement does not compete with what it measures; then one probe of the LEASED index
	// (a few rows at most) every few milliseconds.
	select {
	case err := <-done:
		stop()
		return fmt.Errorf("consumer stopped early: %v", err)
	case <-allHandled:
	}
	for {
		var leased int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state = 'LEASED'`).Scan(&leased); err != nil {
			stop()
			return err
		}
		if leased == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	finished := time.Now()
	stop()
	if err := <-done; err != nil && ctx.Err() == nil {
		return fmt.Errorf("consumer: %w", err)
	}
	var doneRows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state = 'DONE' AND delivery_key LIKE 'prefill-%'`).Scan(&doneRows); err != nil {
		return err
	}
	if doneRows != rows {
		return fmt.Errorf("%d of %d rows DONE", doneRows, rows)
	}

	fmt.Fprintf(os.Stderr, "    consumer: %s\n", store)
	violations, handled := 0, 0
	for _, ids := range seen {
		handled += len(ids)
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				violations++
			}
		}
	}
	if handled < rows {
		return fmt.Errorf("handler saw %d of %d rows", handled, rows)
	}
	return json.NewEncoder(os.Stdout).Encode(dispatchResult{
		Rows: rows, Scopes: scopes, Claimers: claimers,
		PerSecond:       float64(rows) / finished.Sub(start).Seconds(),
		OrderViolations: violations,
	})
}

// prefill copies rows QUEUED rows with 2 KB payloads into the inbox, each in a scope drawn at
// random (a fixed seed), so scopes interleave as deliveries of many repositories do.
func prefill(ctx context.Context, pool *pgxpool.Pool, rows, scopes int) error {
	var workspaceID int64
	if err := pool.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'bench'`).Scan(&workspaceID); err != nil {
		return err
	}
	body := issuePayload(1)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if n == rows {
			return nil, nil
		}
		n++
		scope := rng.IntN(scopes)
		subject := fmt.Sprintf("github:repository:%d", 1_000_000+scope)
		return []any{workspaceID, "GITHUB", "issues", fmt.Sprintf("prefill-%d", n),
			fmt.Sprintf("ws:%d:%s", workspaceID, subject), subject, body, []byte("{}")}, nil
	})
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"provider_event"},
		[]string{"workspace_id", "provider", "event_type", "delivery_key", "scope_key", "subject", "payload", "headers"}, src)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `ANALYZE provider_event`)
	return err
}

// prefillHotScope stores the hot scope of the hot scope row: a head that failed once and waits
// an hour for its retry (as the seed's backoff makes a failed row wait), then hotRows QUEUED
// rows behind it. The backlog's payloads are small: what is measured is whether a claim reads
// these rows, not their size.
func prefillHotScope(ctx context.Context, pool *pgxpool.Pool, hotRows int) error {
	_, err := pool.Exec(ctx, `
WITH w AS (SELECT id FROM workspace WHERE slug = 'bench')
INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
                            payload, attempt, lease_epoch, due_at)
SELECT w.id, 'GITHUB', 'issues', 'hot-' || g, 'ws:' || w.id || ':github:repository:42', 'github:repository:42',
       '{"action":"edited"}', CASE WHEN g = 0 THEN 1 ELSE 0 END, CASE WHEN g = 0 THEN 1 ELSE 0 END,
       CASE WHEN g = 0 THEN now() + interval '1 hour' ELSE now() END
FROM w, generate_series(0, $1::int) g
ORDER BY g`, hotRows)
	return err
}
