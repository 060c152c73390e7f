package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The count phase (`bench -phase count`) measures the handled-delivery path of one
// GitHub `issues` delivery deterministically: a pgx tracer on a one-connection pool counts,
// for each part of the path (admission insert, batched claim, the handler's fenced
// transactions, batched outcome), the round trips (each Exec, Query and batch is one wait for
// the server), the statements, the commits (COMMIT, and autocommit statements or batches that
// wrote), the rows written (pg_stat_database's inserted, updated and deleted tuples, flushed
// with pg_stat_force_next_flush: a function's writes count, index-only work does not; a
// claim's or outcome's rows are counted once per row updated), and the WAL bytes each part
// wrote (pg_current_wal_lsn on a second, untraced connection). The handler is the server's:
// the real issues handler, the PostgreSQL delivery inbox and the GitHub mirror publishing to
// the change feed as bootstrap wires it. Statement caches are warmed by a first batch that is
// not counted. Counts do not depend on the machine's load; the wall-clock column does.

// countBatch is how many deliveries one claim leases and one outcome write ends in the count
// phase: the consumer's default claim batch, so claim and outcome are shown per delivery as
// the share of a batch the seed asks for.
const countBatch = 32

// tally is what the tracer counted.
type tally struct {
	RoundTrips  int     `json:"roundTrips"`
	Statements  int     `json:"statements"`
	Commits     int     `json:"commits"`
	RowsWritten int     `json:"rowsWritten"`
	WALBytes    int64   `json:"walBytes"`
	Micros      float64 `json:"micros"`
	// DatabaseCPUMicros and ClientCPUMicros are the cluster's and this process's CPU time
	// (clock ticks of 10 ms: meaningful over many deliveries only).
	DatabaseCPUMicros float64 `json:"databaseCpuMicros"`
	ClientCPUMicros   float64 `json:"clientCpuMicros"`
}

func (t tally) plus(o tally) tally {
	return tally{RoundTrips: t.RoundTrips + o.RoundTrips, Statements: t.Statements + o.Statements,
		Commits: t.Commits + o.Commits, RowsWritten: t.RowsWritten + o.RowsWritten, WALBytes: t.WALBytes + o.WALBytes,
		Micros: t.Micros + o.Micros, DatabaseCPUMicros: t.DatabaseCPUMicros + o.DatabaseCPUMicros,
		ClientCPUMicros: t.ClientCPUMicros + o.ClientCPUMicros}
}

// countTracer counts what its pool's connections send. One goroutine at a time uses the pool.
type countTracer struct {
	mu  sync.Mutex
	cur tally
	sql []string // the statements of the current part, in order (for -count-verbose)
	// batchWrote: a statement of the running batch wrote; the batch is one implicit
	// transaction when it runs outside an explicit one.
	batchWrote bool
	// batchCommitted: the running batch sent COMMIT (counted there).
	batchCommitted bool
	// off: statements of the measurement itself, not counted.
	off bool
}

// writes tells whether a statement's text writes rows (a data-modifying WITH).
func writes(sql string) bool {
	u := strings.ToUpper(sql)
	return strings.Contains(u, "UPDATE ") || strings.Contains(u, "INSERT ") || strings.Contains(u, "DELETE ")
}

type traceKey struct{}

func (c *countTracer) take() (tally, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, s := c.cur, c.sql
	c.cur, c.sql = tally{}, nil
	return t, s
}

func (c *countTracer) statement(conn *pgx.Conn, sql string, tag pgconn.CommandTag, err error, batched bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	word := strings.ToLower(strings.Fields(strings.TrimSpace(sql) + " x")[0])
	switch word {
	case "begin":
		c.sql = append(c.sql, "BEGIN")
		return
	case "commit":
		c.cur.Commits++
		c.batchCommitted = batched
		c.sql = append(c.sql, "COMMIT")
		return
	case "rollback":
		c.sql = append(c.sql, "ROLLBACK")
		return
	}
	c.cur.Statements++
	wrote := 0
	switch {
	case err != nil:
	case tag.Insert() || tag.Update() || tag.Delete():
		wrote = int(tag.RowsAffected())
	case tag.Select() && writes(sql):
		// A data-modifying WITH answers SELECT n: the rows it returns are the rows it wrote
		// (the claim's and the outcome's statements return one row per row they update).
		wrote = int(tag.RowsAffected())
	}
	_ = wrote // rows written are read from pg_stat_database (functions write too)
	if wrote > 0 && conn.PgConn().TxStatus() == 'I' {
		c.cur.Commits++ // an autocommit statement that wrote
	} else if wrote > 0 && batched {
		c.batchWrote = true
	}
	c.sql = append(c.sql, oneLine(sql))
}

func oneLine(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return s
}

func (c *countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	if c.off {
		c.mu.Unlock()
		return context.WithValue(ctx, traceKey{}, "")
	}
	c.cur.RoundTrips++
	c.mu.Unlock()
	return context.WithValue(ctx, traceKey{}, d.SQL)
}

func (c *countTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(traceKey{}).(string)
	if sql == "" {
		return
	}
	c.statement(conn, sql, d.CommandTag, d.Err, false)
}

func (c *countTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.mu.Lock()
	c.cur.RoundTrips++
	c.mu.Unlock()
	return ctx
}

func (c *countTracer) TraceBatchQuery(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.statement(conn, d.SQL, d.CommandTag, d.Err, true)
}

func (c *countTracer) TraceBatchEnd(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchEndData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batchWrote && !c.batchCommitted && d.Err == nil && conn.PgConn().TxStatus() == 'I' {
		c.cur.Commits++ // the implicit transaction of a batch sent outside a transaction
	}
	c.batchWrote, c.batchCommitted = false, false
}

// countPart is one measured part of the path.
type countPart struct {
	Name     string   `json:"name"`
	PerItem  tally    `json:"perDelivery"`
	Batch    int      `json:"batch"`
	Examples []string `json:"statements,omitempty"`
}

// runCount measures the path for the bench payload (the pipeline row's `issues` delivery:
// no labels, no milestone) and for an issue with two labels and a milestone, each first as a
// delivery of an issue the mirror already holds (the warm-up wrote it) under a newer event.
func runCount(ctx context.Context, cycles int, verbose bool) error {
	admin := os.Getenv("HEPHAESTUS_TEST_DATABASE_URL")
	if admin == "" {
		admin = os.Getenv("DATABASE_URL")
	}
	if admin == "" {
		return errors.New("no database: set HEPHAESTUS_TEST_DATABASE_URL or DATABASE_URL")
	}
	dbURL, drop, err := createDatabase(ctx, admin, "hx_bench_count")
	if err != nil {
		return err
	}
	defer drop()
	if err := seedBenchRoute(ctx, dbURL); err != nil {
		return err
	}
	tracer := &countTracer{}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns, cfg.MinConns = 1, 1
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	side, err := openPool(ctx, dbURL, 1)
	if err != nil {
		return err
	}
	defer side.Close()
	if err := seedPipelineRepos(ctx, side); err != nil {
		return err
	}

	store, err := inboxstore.New(pool, inboxstore.Config{})
	if err != nil {
		return err
	}
	dinbox, err := deliveryinbox.New(pool)
	if err != nil {
		return err
	}
	mirror, err := githubmirror.New(pool)
	if err != nil {
		return err
	}
	feed, err := changefeed.New(pool, nil)
	if err != nil {
		return err
	}
	if err := mirror.PublishChanges(feed, githubread.Views{}); err != nil {
		return err
	}
	reg := consumer.NewRegistry()
	if err := githubhandlers.Register(reg, githubhandlers.Deps{Inbox: dinbox, Store: mirror}); err != nil {
		return err
	}
	handler, ok := reg.Lookup(github.Provider, githubhandlers.EventIssues)
	if !ok {
		return errors.New("no issues handler")
	}
	var workspaceID int64
	if err := side.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'bench'`).Scan(&workspaceID); err != nil {
		return err
	}

	walLSN := func() (int64, error) {
		var n int64
		err := side.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn`).Scan(&n)
		return n, err
	}
	// rowsWritten is the database's inserted, updated and deleted tuples so far, after the
	// traced connection flushed its statistics (pg_stat_force_next_flush: at its next idle).
	rowsWritten := func() (int64, error) {
		tracer.mu.Lock()
		tracer.off = true
		tracer.mu.Unlock()
		defer func() {
			tracer.mu.Lock()
			tracer.off = false
			tracer.mu.Unlock()
		}()
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			return 0, err
		}
		var last, n int64 = -1, 0
		for range 50 { // until two readings agree: the flush happens as the backend goes idle
			time.Sleep(20 * time.Millisecond)
			if err := side.QueryRow(ctx, `SELECT tup_inserted + tup_updated + tup_deleted
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
	measure := func(name string, items int, fn func() error) (countPart, error) {
		r0, err := rowsWritten()
		if err != nil {
			return countPart{}, err
		}
		tracer.take()
		w0, err := walLSN()
		if err != nil {
			return countPart{}, err
		}
		db0, _ := databaseCPU(ctx, side)
		cpu0 := selfCPU()
		start := time.Now()
		if err := fn(); err != nil {
			return countPart{}, fmt.Errorf("%s: %w", name, err)
		}
		elapsed := time.Since(start)
		cpu1 := selfCPU()
		db1, _ := databaseCPU(ctx, side)
		w1, err := walLSN()
		if err != nil {
			return countPart{}, err
		}
		t, sqls := tracer.take()
		r1, err := rowsWritten()
		if err != nil {
			return countPart{}, err
		}
		t.RowsWritten = int(r1 - r0)
		t.WALBytes = w1 - w0
		t.Micros = float64(elapsed.Microseconds())
		t.DatabaseCPUMicros, t.ClientCPUMicros = float64((db1 - db0).Microseconds()), float64((cpu1 - cpu0).Microseconds())
		p := countPart{Name: name, Batch: items, PerItem: t}
		if verbose {
			p.Examples = sqls
		}
		return p, nil
	}

	// cycle admits countBatch deliveries of payload (one per repository, so one claim leases
	// them all), claims them in one statement, handles each and records their outcomes at once.
	serial := 0
	cycle := func(label string, payload func(repo int) []byte) ([]countPart, []string, error) {
		keys := make([]string, countBatch)
		var parts []countPart
		admit, err := measure(label+": admission insert", countBatch, func() error {
			for i := range countBatch {
				serial++
				keys[i] = fmt.Sprintf("count-%d", serial)
				subject := fmt.Sprintf("github:repository:%d", repositoryID+i)
				body := payload(i)
				if _, err := pool.Exec(ctx, `
INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, headers)
VALUES ($1, 'GITHUB', 'issues', $2, $3, $4, $5, '{}')`, workspaceID, keys[i], fmt.Sprintf("ws:%d:%s", workspaceID, subject),
					subject, body); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, admit)
		var claimed []ports.Claimed
		claim, err := measure(label+": claim (one batch)", countBatch, func() error {
			claimed, err = store.Claim(ctx, "count", countBatch, time.Minute)
			if err == nil && len(claimed) != countBatch {
				err = fmt.Errorf("claimed %d of %d", len(claimed), countBatch)
			}
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, claim)
		handle, err := measure(label+": handler (fenced transactions)", countBatch, func() error {
			for _, c := range claimed {
				hctx := dispatch.BindDispatch(ctx, c)
				herr := handler.Handle(hctx, ports.Dispatch{Delivery: c.Delivery, WorkspaceID: c.Delivery.WorkspaceID(),
					Payload: c.Payload, Headers: c.Headers})
				if herr = ports.FenceRejectionsFrom(hctx).Verdict(herr); herr != nil {
					return herr
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, handle)
		outcome, err := measure(label+": outcome (one batch)", countBatch, func() error {
			results := make([]ports.Result, len(claimed))
			for i, c := range claimed {
				results[i] = ports.Result{Ack: ports.Ack{ID: c.Delivery.ID(), Epoch: c.Delivery.Lease().Epoch()}, Decision: inbox.Completed()}
			}
			_, err := store.Record(ctx, results)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, outcome)
		return parts, keys, nil
	}

	plain := func(repo int) []byte { return repoPayload(serial, repo) }
	labelled := func(repo int) []byte { return withLabelsAndMilestone(repoPayload(serial, repo)) }
	// Warm the statement caches (one connection: every statement of both payloads).
	if _, _, err := cycle("warm-up", plain); err != nil {
		return err
	}
	if _, _, err := cycle("warm-up", labelled); err != nil {
		return err
	}
	var all []countPart
	for _, sc := range []struct {
		name    string
		payload func(int) []byte
	}{{"bench issues (no labels)", plain}, {"issues with 2 labels and a milestone", labelled}} {
		var sum []countPart
		for c := range cycles {
			parts, _, err := cycle(sc.name, sc.payload)
			if err != nil {
				return err
			}
			if c == 0 {
				sum = parts
				continue
			}
			for i := range parts {
				sum[i].PerItem = sum[i].PerItem.plus(parts[i].PerItem)
				sum[i].Batch += parts[i].Batch
			}
		}
		all = append(all, sum...)
	}
	printCount(all, verbose)
	return json.NewEncoder(os.Stdout).Encode(all)
}

// withLabelsAndMilestone adds two labels and a milestone to an issues payload.
func withLabelsAndMilestone(b []byte) []byte {
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	issue := doc["issue"].(map[string]any)
	issue["labels"] = []map[string]any{
		{"id": 208045946, "name": "bug", "color": "f29513", "default": true},
		{"id": 208045947, "name": "enhancement", "color": "a2eeef", "default": false},
	}
	issue["milestone"] = map[string]any{"id": 1002604, "number": 1, "title": "v1.0", "state": "open",
		"creator": map[string]any{"login": "octocat", "id": 583231, "type": "User"}, "updated_at": "2026-11-30T12:00:00Z"}
	out, _ := json.Marshal(doc)
	return out
}

func printCount(parts []countPart, verbose bool) {
	fmt.Fprintln(os.Stderr, "per delivery | round trips | statements | commits | rows written | WAL bytes | wall µs | PostgreSQL CPU µs | client CPU µs")
	fmt.Fprintln(os.Stderr, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, p := range parts {
		t := p.PerItem
		n := float64(p.Batch)
		fmt.Fprintf(os.Stderr, "| %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f |\n", p.Name,
			perStr(t.RoundTrips, p.Batch), perStr(t.Statements, p.Batch), perStr(t.Commits, p.Batch),
			perStr(t.RowsWritten, p.Batch), float64(t.WALBytes)/n, t.Micros/n, t.DatabaseCPUMicros/n, t.ClientCPUMicros/n)
		if verbose {
			for _, s := range p.Examples[:min(len(p.Examples), 30)] {
				fmt.Fprintf(os.Stderr, "    %s\n", s)
			}
		}
	}
}

// perStr shows a batch's count per delivery.
func perStr(n, batch int) string {
	if n%batch == 0 {
		return fmt.Sprint(n / batch)
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(batch))
}
