package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The river row (CONTRACT.md "Performance table"): River, the pinned module of go.mod, drains
// as many pre-filled no-op jobs as the dispatch row drains rows, on the same cluster in the
// same run. River's tables live in a database of their own (riverDatabase), migrated by
// River's own migrator, so they never touch the product schema. The fetch settings are the
// ones River's own benchmark (cmd/river's riverbench) uses to maximise throughput; River's
// defaults (100 ms cooldown, 1 s poll) would measure its idle latency instead.
const (
	riverDatabase          = "hx_bench_river"
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 20 * time.Millisecond
	riverMaxWorkers        = 2000
	riverInsertBatch       = 5000
)

type riverResult struct {
	Jobs      int     `json:"jobs"`
	PerSecond float64 `json:"perSecond"`
}

// noopArgs is the no-op job River drains.
type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "hx_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// benchRiver measures the river row: jobs no-op jobs split over rounds, each round pre-filled
// with InsertManyFast before the client starts and timed from Start to the last completion
// its subscription reports (River's own benchmark counts completions the same way, so the
// time includes the completer's writes). The rate is the jobs over the summed time.
func benchRiver(ctx context.Context, admin string, jobs, rounds int) (riverResult, error) {
	dbURL, drop, err := createRiverDatabase(ctx, admin)
	if err != nil {
		return riverResult{}, err
	}
	defer drop()
	pool, err := openPool(ctx, dbURL, 40)
	if err != nil {
		return riverResult{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger()})
	if err != nil {
		return riverResult{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return riverResult{}, fmt.Errorf("river migrations: %w", err)
	}
	perRound := jobs / rounds
	var total time.Duration
	for round := 1; round <= rounds; round++ {
		w0 := tuplesWritten(ctx, pool)
		d, err := riverRound(ctx, pool, driver, perRound)
		if err != nil {
			return riverResult{}, fmt.Errorf("river round %d: %w", round, err)
		}
		// Backends report their statistics at most once a second, when idle.
		time.Sleep(1500 * time.Millisecond)
		w1 := tuplesWritten(ctx, pool)
		fmt.Fprintf(os.Stderr, "  round %d: river %.0f jobs/s, %.2f rows written per job (insert included)\n",
			round, float64(perRound)/d.Seconds(), float64(w1-w0)/float64(perRound))
		total += d
	}
	return riverResult{Jobs: perRound * rounds, PerSecond: float64(perRound*rounds) / total.Seconds()}, nil
}

// riverRound empties river_job, inserts jobs no-op jobs, starts a client with River's
// benchmark settings and returns the time from Start to the last completion.
func riverRound(ctx context.Context, pool *pgxpool.Pool, driver *riverpgxv5.Driver, jobs int) (time.Duration, error) {
	if _, err := pool.Exec(ctx, `TRUNCATE river_job`); err != nil {
		return 0, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Logger:            quietLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverMaxWorkers}},
		Workers:           workers,
	})
	if err != nil {
		return 0, err
	}
	params := make([]river.InsertManyParams, 0, riverInsertBatch)
	for n := 1; n <= jobs; n++ {
		params = append(params, river.InsertManyParams{Args: noopArgs{N: n}})
		if len(params) == riverInsertBatch || n == jobs {
			if _, err := client.InsertManyFast(ctx, params); err != nil {
				return 0, fmt.Errorf("insert jobs: %w", err)
			}
			params = params[:0]
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE river_job`); err != nil {
		return 0, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: jobs,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancel()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() { _ = client.Stop(context.WithoutCancel(ctx)) }()
	timeout := time.NewTimer(5 * time.Minute)
	defer timeout.Stop()
	for done := 0; done < jobs; done++ {
		select {
		case e := <-events:
			if e == nil {
				return 0, errors.New("the subscription closed early")
			}
			if e.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("a no-op job ended %s", e.Kind)
			}
		case <-timeout.C:
			return 0, fmt.Errorf("%d of %d jobs completed in 5 minutes", done, jobs)
		}
	}
	return time.Since(start), nil
}

// quietLogger drops River's logs: the table is the output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// createRiverDatabase makes a fresh, empty database for River next to the admin URL's.
func createRiverDatabase(ctx context.Context, admin string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+riverDatabase+" WITH (FORCE)"); err != nil {
		return "", nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+riverDatabase); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + riverDatabase
	drop := func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+riverDatabase+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

// tuplesWritten is the database's inserted, updated and deleted tuples so far (-1: unknown).
func tuplesWritten(ctx context.Context, pool *pgxpool.Pool) int64 {
	var n int64
	if err := pool.QueryRow(ctx, `SELECT tup_inserted + tup_updated + tup_deleted FROM pg_stat_database
		WHERE datname = current_database()`).Scan(&n); err != nil {
		return -1
	}
	return n
}
