package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// the provider modules as bootstrap builds them (servedRegistry: the real handlers, the
// PostgreSQL delivery inbox, the mirrors publishing to the change feed). Statement caches are
// warmed by a first batch that is not counted. Counts do not depend on the machine's load; the
// wall-clock column does. With -count-mix the phase then counts every event type of the
// pipeline mix the same way (countmix.go).

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

// statementsSoFar is how many statements of the current part were listed.
func (c *countTracer) statementsSoFar() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sql)
}

func (c *countTracer) statement(conn *pgx.Conn, sql string, tag pgconn.CommandTag, err error, batched bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	word := strings.ToLower(strings.Fields(strings.TrimSpace(sql) + " x")[0])
	switch word {
	case "begin":
		c.sql = append(c.sql, c.numbered("BEGIN"))
		return
	case "commit":
		c.cur.Commits++
		c.batchCommitted = batched
		c.sql = append(c.sql, c.numbered("COMMIT"))
		return
	case "rollback":
		c.sql = append(c.sql, c.numbered("ROLLBACK"))
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
	c.sql = append(c.sql, c.numbered(oneLine(sql)))
}

// numbered prefixes a listed statement with the part's round trip that sent it, so the
// statements of one batch share a number.
func (c *countTracer) numbered(sql string) string {
	return fmt.Sprintf("%3d  %s", c.cur.RoundTrips, sql)
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
// With mix, it then measures every event type of the pipeline mix (countMix).
func runCount(ctx context.Context, cycles int, verbose, mix bool) error {
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
	var mixRows map[string][]countRow
	if mix {
		// The mix's connections and a first handling of each of its deliveries, by a server.
		if mixRows, err = prepareCountMix(ctx, dbURL); err != nil {
			return fmt.Errorf("prepare the mix: %w", err)
		}
	}
	r, closeRig, err := newCountRig(ctx, dbURL, verbose)
	if err != nil {
		return err
	}
	defer closeRig()
	if err := seedPipelineRepos(ctx, r.side); err != nil {
		return err
	}

	issues := func(payload func(n, repo int) []byte) func(c int) []countRow {
		return func(int) []countRow {
			rows := make([]countRow, countBatch)
			for i := range rows {
				subject := fmt.Sprintf("github:repository:%d", repositoryID+i)
				rows[i] = countRow{provider: "GITHUB", eventType: "issues", subject: subject,
					scopeKey: fmt.Sprintf("ws:%d:%s", r.workspaceID, subject), payload: payload(r.serial+i+1, i), headers: []byte("{}")}
			}
			return rows
		}
	}
	plain := issues(repoPayload)
	labelled := issues(func(n, repo int) []byte { return withLabelsAndMilestone(repoPayload(n, repo)) })
	// Warm the statement caches (one connection: every statement of both payloads).
	if _, err := r.cycles("warm-up", 1, 0, plain, false); err != nil {
		return err
	}
	if _, err := r.cycles("warm-up", 1, 0, labelled, false); err != nil {
		return err
	}
	var all []countPart
	for _, sc := range []struct {
		name  string
		batch func(int) []countRow
	}{{"bench issues (no labels)", plain}, {"issues with 2 labels and a milestone", labelled}} {
		sum, err := r.cycles(sc.name, 0, cycles, sc.batch, false)
		if err != nil {
			return err
		}
		all = append(all, sum...)
	}
	printCount(all, verbose, 30)
	if err := json.NewEncoder(os.Stdout).Encode(all); err != nil {
		return err
	}
	if !mix {
		return nil
	}
	return r.countMix(mixRows, cycles)
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

// printCount prints the parts' counts per delivery and, when verbose, up to limit of each
// part's statements.
func printCount(parts []countPart, verbose bool, limit int) {
	fmt.Fprintln(os.Stderr, "per delivery | round trips | statements | commits | rows written | WAL bytes | wall µs | PostgreSQL CPU µs | client CPU µs")
	fmt.Fprintln(os.Stderr, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, p := range parts {
		t := p.PerItem
		n := float64(p.Batch)
		fmt.Fprintf(os.Stderr, "| %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f |\n", p.Name,
			perStr(t.RoundTrips, p.Batch), perStr(t.Statements, p.Batch), perStr(t.Commits, p.Batch),
			perStr(t.RowsWritten, p.Batch), float64(t.WALBytes)/n, t.Micros/n, t.DatabaseCPUMicros/n, t.ClientCPUMicros/n)
		if verbose {
			for _, s := range p.Examples[:min(len(p.Examples), limit)] {
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
