package inbox_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// BenchmarkDispatch measures dispatch: a pre-filled inbox (HX_BENCH_ROWS, default 100,000 rows
// of about 2 KB over HX_BENCH_SCOPES, default 1,000 scopes), one server with HX_BENCH_CLAIMERS
// (default 8) claimers and a no-op handler that checks each scope's order. It reports rows/s.
// Run it with -run '^$' -bench Dispatch -benchtime 1x against the cluster named by
// HEPHAESTUS_TEST_DATABASE_URL (the dev cluster runs with fsync off: its figures are optimistic).
func BenchmarkDispatch(b *testing.B) {
	ctx := context.Background()
	rows, scopes, claimers := envInt("HX_BENCH_ROWS", 100_000), envInt("HX_BENCH_SCOPES", 1000), envInt("HX_BENCH_CLAIMERS", 8)
	d, err := pgtest.NewDatabase(ctx)
	if err != nil {
		b.Skip(err)
	}
	defer func() { _ = d.Drop(context.Background()) }()
	p, err := d.Pool(ctx, int32(claimers+8))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	st, err := inboxstore.New(p, inboxstore.Config{})
	if err != nil {
		b.Fatal(err)
	}

	for range b.N {
		b.StopTimer()
		if err := pgtest.Truncate(ctx, p); err != nil {
			b.Fatal(err)
		}
		if err := prefill(ctx, p, rows, scopes); err != nil {
			b.Fatal(err)
		}
		order := &orderCheck{last: map[string]int64{}}
		reg := consumer.NewRegistry()
		if err := reg.Register(github, "issues", ports.HandlerFunc(order.handle)); err != nil {
			b.Fatal(err)
		}
		timed := &timedStore{InboxStore: st}
		c, err := consumer.New(consumer.Config{Owner: "bench", Claimers: claimers, PollInterval: 50 * time.Millisecond,
			ClaimAhead: envInt("HX_BENCH_CLAIM_AHEAD", 0), ClaimBatch: envInt("HX_BENCH_CLAIM_BATCH", 0)},
			timed, reg, consumer.NewSignal(), systemClock{}, discardLogger{}, noopMetrics{})
		if err != nil {
			b.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { done <- c.Run(runCtx) }()
		for {
			var n int
			if err := p.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state = 'DONE'`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n == rows {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if v := order.violations(); v > 0 {
			b.Fatalf("%d order violations", v)
		}
		b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
		b.Logf("store calls: %s", timed)
		b.Logf("%d rows over %d scopes with %d claimers in %s: %.0f rows/s", rows, scopes, claimers,
			elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds())
	}
}

// prefill stores rows interleaved over scopes, each with a distinct payload of about 2 KB.
func prefill(ctx context.Context, p *pgxpool.Pool, rows, scopes int) error {
	var ws int64
	if err := p.QueryRow(ctx, `INSERT INTO workspace (slug, name) VALUES ('bench', 'Bench') RETURNING id`).Scan(&ws); err != nil {
		return err
	}
	keys, subjects := make([]string, scopes), make([]string, scopes)
	for i := range scopes {
		s, err := inbox.NewSubject("github", "repository", strconv.Itoa(i))
		if err != nil {
			return err
		}
		scope, err := inbox.WorkspaceScope(ws, s)
		if err != nil {
			return err
		}
		keys[i], subjects[i] = scope.String(), s.String()
	}
	_, err := p.Exec(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload)
		SELECT $1, 'GITHUB', 'issues', 'bench-' || g, ($2::text[])[g % $4 + 1], ($3::text[])[g % $4 + 1],
		       jsonb_build_object('n', g, 'pad', (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 60) i))
		FROM generate_series(1, $5) g
		ORDER BY g`, ws, keys, subjects, scopes, rows)
	if err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	_, err = p.Exec(ctx, `VACUUM ANALYZE provider_event`)
	return err
}

// orderCheck counts rows handled out of their scope's id order.
type orderCheck struct {
	mu   sync.Mutex
	last map[string]int64
	bad  int
}

func (o *orderCheck) handle(_ context.Context, d ports.Dispatch) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	scope := d.Delivery.Scope().String()
	if d.Delivery.ID() <= o.last[scope] {
		o.bad++
	}
	o.last[scope] = d.Delivery.ID()
	return nil
}

func (o *orderCheck) violations() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bad
}

type discardLogger struct{}

func (discardLogger) Debugw(string, ...any) {}
func (discardLogger) Infow(string, ...any)  {}
func (discardLogger) Warnw(string, ...any)  {}
func (discardLogger) Errorw(string, ...any) {}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// timedStore counts and times the claim and record calls of a benchmark run.
type timedStore struct {
	ports.InboxStore
	mu                    sync.Mutex
	claims, claimed       int
	records, recorded     int
	claimTime, recordTime time.Duration
}

func (t *timedStore) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	start := time.Now()
	c, err := t.InboxStore.Claim(ctx, owner, limit, lease)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.claims++
	t.claimed += len(c)
	t.claimTime += time.Since(start)
	return c, err
}

func (t *timedStore) Record(ctx context.Context, results []ports.Result) ([]ports.RecordStatus, error) {
	start := time.Now()
	a, err := t.InboxStore.Record(ctx, results)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.records++
	t.recorded += len(results)
	t.recordTime += time.Since(start)
	return a, err
}

func (t *timedStore) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d claims (%d rows, avg %s), %d records (%d rows, avg %s)",
		t.claims, t.claimed, t.claimTime/time.Duration(max(t.claims, 1)),
		t.records, t.recorded, t.recordTime/time.Duration(max(t.records, 1)))
}
