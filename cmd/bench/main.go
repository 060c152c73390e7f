// Command bench prints the performance table of CONTRACT.md and writes bench-results.json.
//
// It runs against the database named by HEPHAESTUS_TEST_DATABASE_URL (set by `make bench`,
// which starts a throwaway cluster with PostgreSQL's durable defaults) or DATABASE_URL, in a
// fresh database it creates and drops. Four measurements, one run, one machine:
//
//   - admission: signed 2 KB GitHub deliveries over loopback HTTP through the real receiver
//     (gin, webhookapi, admission service, admission store), N concurrent senders;
//
//   - ceiling: the same number of single-row inserts of the same payload with the same unique
//     index, straight into PostgreSQL at the same concurrency; the two rows alternate in
//     rounds (-rounds, default 4) so that both see the same machine conditions;
//
//   - dispatch: a pre-filled inbox of M rows over S scopes handled by the real consumer with a
//     no-op handler and C claimers, in a child process whose peak RSS is reported; the
//     handler records the order it saw, and the per-scope order is verified;
//
//   - dispatch floor: the same inbox drained by the store's claim and outcome statements alone
//     at the best of 1, 2 and 4 clients, alternating with the dispatch rounds;
//
//   - pipeline and pipeline floor: `hephaestus serve` (bootstrap's wiring, in a child process)
//     fed signed `issues` deliveries of 100 repositories at a bounded backlog and mirroring them
//     with the real handler, alternating with the commits the seed requires for the same
//     deliveries run straight into PostgreSQL, one round trip each (seedfloor.go);
//     -statement-floor adds the handler's own statements as before;
//
//   - hot scope: the dispatch of 10,000 rows over the same scopes, with and without one more
//     scope holding 200,000 rows behind a head that waits for its retry, alternating;
//
//   - river: River (the pinned module) draining as many pre-filled no-op jobs as the dispatch
//     row drains rows, in a database of its own on the same cluster, with the fetch settings of
//     River's own benchmark (river.go);
//
//   - pipeline mix and its floor: the pipeline fed a seeded mix of all four providers' deliveries,
//     and the same stored rows run through their handlers straight into PostgreSQL (mix.go,
//     mixrow.go).
//
// -only runs some rows (admission, dispatch, river, hot, pipeline, mix). -soak runs `make soak`
// instead of the table (soak.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// admissionProfile and allocationProfile, when set, name the files the CPU and allocation
// profiles of the admission and ceiling rounds are written to.
var admissionProfile, allocationProfile string

// dispatchProfile, when set, names the file the dispatch child writes its CPU profile to.
var dispatchProfile string

// serveProfile, when set, names the file each pipeline server writes its CPU profile to (handed
// to the serve child in envServeCPUProfile).
var serveProfile string

// claimLoops, when positive, overrides the consumer's ClaimLoops in the dispatch child.
var claimLoops int

// claimAhead, when positive, overrides the consumer's ClaimAhead in the dispatch child.
var claimAhead int

type admissionResult struct {
	Senders   int     `json:"senders"`
	PerSecond float64 `json:"perSecond"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
}

type ceilingResult struct {
	Clients   int     `json:"clients"`
	PerSecond float64 `json:"perSecond"`
}

type dispatchResult struct {
	Rows            int     `json:"rows"`
	Scopes          int     `json:"scopes"`
	Claimers        int     `json:"claimers"`
	PerSecond       float64 `json:"perSecond"`
	OrderViolations int     `json:"orderViolations"`
	PeakRssBytes    int64   `json:"peakRssBytes"`
	// cpu is the child process's CPU time (stderr only).
	cpu time.Duration
}

type hotScopeResult struct {
	Rows      int     `json:"rows"`
	HotRows   int     `json:"hotRows"`
	PerSecond float64 `json:"perSecond"`
	Ratio     float64 `json:"ratio"`
}

type results struct {
	Admission     admissionResult     `json:"admission"`
	Ceiling       ceilingResult       `json:"ceiling"`
	Ratio         float64             `json:"ratio"`
	Dispatch      dispatchResult      `json:"dispatch"`
	DispatchFloor dispatchFloorResult `json:"dispatchFloor"`
	Pipeline      pipelineResult      `json:"pipeline"`
	PipelineFloor pipelineFloorResult `json:"pipelineFloor"`
	HotScope      hotScopeResult      `json:"hotScope"`
	River         riverResult         `json:"river"`
	// The pipeline mix row (cmd/bench/mix.go, mixrow.go).
	PipelineMix      pipelineMixResult      `json:"pipelineMix"`
	PipelineMixFloor pipelineMixFloorResult `json:"pipelineMixFloor"`
}

func main() {
	phase := flag.String("phase", "all", "all | count (round trips, statements, commits and rows written of one handled issues delivery) | dispatch | serve (internal: the dispatch and pipeline child processes)")
	flag.BoolVar(&statementFloor, "statement-floor", false, "pipeline rows: also run the handler's own statements straight into PostgreSQL (the earlier, per-statement pipeline floor)")
	countCycles := flag.Int("count-cycles", 10, "count phase: batches of 32 deliveries measured per payload")
	countVerbose := flag.Bool("count-verbose", false, "count phase: list each part's statements")
	countMix := flag.Bool("count-mix", false, "count phase: also count every event type of the pipeline mix (a table row each, with its weight)")
	dbURL := flag.String("db", "", "internal: the benchmark database for a child phase")
	addr := flag.String("addr", "", "internal: the listen address of the serve phase")
	senders := flag.Int("senders", 32, "concurrent HTTP senders (and ceiling clients)")
	deliveries := flag.Int("deliveries", 20000, "deliveries sent in the admission and ceiling rows")
	rounds := flag.Int("rounds", 4, "alternating admission and ceiling rounds the deliveries are split over")
	rows := flag.Int("rows", 100000, "rows pre-filled for the dispatch row")
	scopes := flag.Int("scopes", 1000, "scopes the dispatch rows are spread over")
	claimers := flag.Int("claimers", 8, "claimers of the dispatch row")
	flag.StringVar(&dispatchProfile, "dispatch-cpuprofile", "", "write a CPU profile of each dispatch child (the consumer) to this file (the last round's stays)")
	flag.StringVar(&serveProfile, "pipeline-cpuprofile", "", "write a CPU profile of each pipeline and pipeline mix server (the serve child) to this file (the last round's stays)")
	flag.IntVar(&claimLoops, "claim-loops", 0, "claim loops of the dispatch rows' consumer (0: the consumer's default)")
	flag.IntVar(&claimAhead, "claim-ahead", 0, "claimed rows that may wait for a worker in the dispatch rows' consumer (0: the consumer's default)")
	hotRows := flag.Int("hot-rows", 200000, "rows behind the blocked head of the hot scope row")
	hotColdRows := flag.Int("hot-cold-rows", 10000, "rows over -scopes cold scopes dispatched in the hot scope row")
	dispatchRounds := flag.Int("dispatch-rounds", 4, "alternating dispatch and dispatch floor rounds the rows are split over")
	pipelineSeconds := flag.Int("pipeline-seconds", 30, "measured seconds of each pipeline and pipeline floor round")
	pipelineRounds := flag.Int("pipeline-rounds", 2, "alternating pipeline and pipeline floor rounds")
	hotRounds := flag.Int("hot-rounds", 2, "alternating rounds of the hot scope row (with and without the hot scope)")
	out := flag.String("out", "bench-results.json", "where the figures are written (repository root)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the admission and ceiling rounds to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the admission and ceiling rounds to this file")
	only := flag.String("only", "", "comma-separated rows to run (admission, dispatch, river, hot, pipeline, mix); empty runs every row")
	flag.StringVar(&mixSettings.corpus, "corpus", "", "the GitHub corpus the mix reads (default: $HEPHAESTUS_GITHUB_CORPUS, or .cache/corpus/github that make corpus fills)")
	flag.Uint64Var(&mixSettings.seed, "mix-seed", 37, "seed of the mix's deliveries")
	flag.IntVar(&mixSettings.rounds, "mix-rounds", 1, "alternating pipeline mix and pipeline mix floor rounds (of -pipeline-seconds each)")
	soak := flag.Bool("soak", false, "run the soak instead of the table (make soak; cmd/bench/soak.go)")
	flag.IntVar(&soakSettings.minutes, "soak-minutes", 10, "minutes of the soak")
	flag.Float64Var(&soakSettings.share, "soak-share", 0.6, "share of the measured pipeline mix capacity the soak feeds")
	flag.StringVar(&soakSettings.out, "soak-out", "soak-results.json", "where the soak's minutes are written (repository root); the chart goes beside it as .svg")
	flag.Float64Var(&soakSettings.rate, "soak-rate", 0, "deliveries per second the soak feeds (0: -soak-share of the capacity measured for -pipeline-seconds)")
	flag.DurationVar(&soakSettings.replayWindow, "soak-replay-window", 2*time.Minute, "the soak server's replay window (DONE rows kept)")
	flag.DurationVar(&soakSettings.deadRetention, "soak-dead-retention", 4*time.Minute, "the soak server's dead retention")
	flag.DurationVar(&soakSettings.retentionPeriod, "soak-retention-interval", 15*time.Second, "the soak server's retention period")
	flag.Parse()
	if *soak && *phase == "all" {
		*phase = "soak"
	}
	admissionProfile, allocationProfile = *cpuProfile, *memProfile

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	var err error
	switch *phase {
	case "dispatch":
		err = runDispatchChild(ctx, *dbURL, *rows, *scopes, *claimers, *hotRows)
	case "count":
		err = runCount(ctx, *countCycles, *countVerbose, *countMix)
	case "serve":
		err = runServeChild(*dbURL, *addr)
	case "soak":
		err = runSoak(*senders, *pipelineSeconds)
	case "all":
		if *rounds < 1 || *deliveries < *rounds*(*senders) {
			err = fmt.Errorf("need at least one round and %d deliveries a round", *senders)
			break
		}
		err = runAll(ctx, *senders, *deliveries, *rounds, *rows, *scopes, *claimers, *dispatchRounds, *out,
			hotScopeSettings{rows: *hotColdRows, hotRows: *hotRows, rounds: *hotRounds},
			pipelineSettings{seconds: *pipelineSeconds, rounds: *pipelineRounds}, newRowSet(*only))
	default:
		err = fmt.Errorf("unknown phase %q", *phase)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// pipelineSettings are the knobs of the pipeline rows.
type pipelineSettings struct{ seconds, rounds int }

// hotScopeSettings are the knobs of the hot scope row.
type hotScopeSettings struct{ rows, hotRows, rounds int }

// rowSet is the rows -only names; nil runs every row.
type rowSet map[string]bool

func (s rowSet) runs(row string) bool { return s == nil || s[row] }

func newRowSet(only string) rowSet {
	if only == "" {
		return nil
	}
	s := rowSet{}
	for _, r := range strings.Split(only, ",") {
		s[strings.TrimSpace(r)] = true
	}
	return s
}

func runAll(ctx context.Context, senders, deliveries, rounds, rows, scopes, claimers, dispatchRounds int, out string, hot hotScopeSettings, pipe pipelineSettings, only rowSet) error {
	admin := os.Getenv("HEPHAESTUS_TEST_DATABASE_URL")
	if admin == "" {
		admin = os.Getenv("DATABASE_URL")
	}
	if admin == "" {
		return errors.New("no database: run `make bench` (it starts a throwaway cluster), or set DATABASE_URL")
	}
	dbURL, drop, err := createDatabase(ctx, admin, "hx_bench")
	if err != nil {
		return err
	}
	defer drop()

	if err := seedBenchRoute(ctx, dbURL); err != nil {
		return err
	}

	var r results
	if only.runs("admission") {
		fmt.Fprintf(os.Stderr, "admission and ceiling: %d signed deliveries from %d senders, then as many single-row inserts from %d clients, in %d alternating rounds…\n",
			deliveries, senders, senders, rounds)
		if r.Admission, r.Ceiling, err = benchAdmissionAndCeiling(ctx, dbURL, senders, deliveries, rounds); err != nil {
			return err
		}
		if r.Ceiling.PerSecond > 0 {
			r.Ratio = r.Admission.PerSecond / r.Ceiling.PerSecond
		}
	}
	if only.runs("dispatch") {
		fmt.Fprintf(os.Stderr, "dispatch and dispatch floor: %d rows over %d scopes, %d claimers against the claim and outcome statements alone, in %d alternating rounds…\n",
			rows, scopes, claimers, dispatchRounds)
		if r.Dispatch, r.DispatchFloor, err = benchDispatchAndFloor(ctx, dbURL, rows, scopes, claimers, dispatchRounds); err != nil {
			return fmt.Errorf("dispatch: %w", err)
		}
	}
	if only.runs("river") {
		fmt.Fprintf(os.Stderr, "river: %d pre-filled no-op jobs drained by River (fetch cooldown %s, poll %s, %d workers) in %d rounds…\n",
			rows, riverFetchCooldown, riverFetchPollInterval, riverMaxWorkers, dispatchRounds)
		if r.River, err = benchRiver(ctx, admin, rows, dispatchRounds); err != nil {
			return fmt.Errorf("river: %w", err)
		}
	}
	if only.runs("hot") {
		fmt.Fprintf(os.Stderr, "hot scope: %d rows over %d scopes, %d claimers, with and without %d rows behind a head waiting for its retry, in %d alternating rounds…\n",
			hot.rows, scopes, claimers, hot.hotRows, hot.rounds)
		if r.HotScope, err = benchHotScope(ctx, dbURL, scopes, claimers, hot); err != nil {
			return fmt.Errorf("hot scope: %w", err)
		}
	}
	if only.runs("pipeline") {
		fmt.Fprintf(os.Stderr, "pipeline and pipeline floor: %d senders into a running server over %d repositories, %d s a round, in %d alternating rounds…\n",
			senders, pipelineRepos, pipe.seconds, pipe.rounds)
		if r.Pipeline, r.PipelineFloor, err = benchPipelineAndFloor(ctx, dbURL, senders, pipe.seconds, pipe.rounds); err != nil {
			return fmt.Errorf("pipeline: %w", err)
		}
	}

	if only.runs("mix") {
		mix, err := buildMix(mixCorpusDir(mixSettings.corpus), mixSettings.seed)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pipeline mix and floor: %d senders, %d deliveries of%s, %d s a round, in %d alternating rounds…\n",
			senders, len(mix), mixShares(mix), pipe.seconds, mixSettings.rounds)
		if r.PipelineMix, r.PipelineMixFloor, err = benchPipelineMixAndFloor(ctx, dbURL, senders, pipe.seconds, mixSettings.rounds, mix); err != nil {
			return fmt.Errorf("pipeline mix: %w", err)
		}
	}

	printTable(r)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	abs, _ := filepath.Abs(out)
	fmt.Printf("\nwritten to %s\n", abs)
	if r.Dispatch.OrderViolations > 0 {
		return fmt.Errorf("%d per-scope order violations", r.Dispatch.OrderViolations)
	}
	return nil
}

// benchHotScope measures the hot scope row: the same dispatch of hot.rows rows over scopes
// cold scopes, once plain and once while the hot scope holds hot.hotRows rows behind a head
// that waits for its retry, alternating for hot.rounds rounds so that both see the same machine.
// Each variant's rate is its rows over its summed time.
func benchHotScope(ctx context.Context, dbURL string, scopes, claimers int, hot hotScopeSettings) (hotScopeResult, error) {
	var plain, blocked time.Duration
	for round := 1; round <= hot.rounds; round++ {
		p, err := dispatchInChild(ctx, dbURL, hot.rows, scopes, claimers, 0)
		if err != nil {
			return hotScopeResult{}, err
		}
		h, err := dispatchInChild(ctx, dbURL, hot.rows, scopes, claimers, hot.hotRows)
		if err != nil {
			return hotScopeResult{}, err
		}
		if p.OrderViolations+h.OrderViolations > 0 {
			return hotScopeResult{}, fmt.Errorf("%d per-scope order violations", p.OrderViolations+h.OrderViolations)
		}
		fmt.Fprintf(os.Stderr, "  round %d: without %.0f rows/s, with the hot scope %.0f rows/s, ratio %.2f\n",
			round, p.PerSecond, h.PerSecond, h.PerSecond/p.PerSecond)
		plain += time.Duration(float64(hot.rows) / p.PerSecond * float64(time.Second))
		blocked += time.Duration(float64(hot.rows) / h.PerSecond * float64(time.Second))
	}
	n := float64(hot.rows * hot.rounds)
	res := hotScopeResult{Rows: hot.rows, HotRows: hot.hotRows, PerSecond: n / blocked.Seconds()}
	res.Ratio = res.PerSecond / (n / plain.Seconds())
	return res, nil
}

// dispatchInChild runs the dispatch row in a child process so that its peak RSS is the
// server's alone, not the benchmark driver's.
func dispatchInChild(ctx context.Context, dbURL string, rows, scopes, claimers, hotRows int) (dispatchResult, error) {
	self, err := os.Executable()
	if err != nil {
		return dispatchResult{}, err
	}
	cmd := exec.CommandContext(ctx, self, "-phase", "dispatch", "-db", dbURL,
		"-rows", fmt.Sprint(rows), "-scopes", fmt.Sprint(scopes), "-claimers", fmt.Sprint(claimers),
		"-hot-rows", fmt.Sprint(hotRows), "-claim-loops", fmt.Sprint(claimLoops), "-claim-ahead", fmt.Sprint(claimAhead), "-dispatch-cpuprofile", dispatchProfile)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		return dispatchResult{}, fmt.Errorf("dispatch child: %w", err)
	}
	var d dispatchResult
	if err := json.Unmarshal(stdout, &d); err != nil {
		return dispatchResult{}, fmt.Errorf("read dispatch child result %q: %w", stdout, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		d.PeakRssBytes = ru.Maxrss * 1024 // Linux reports kilobytes
	}
	d.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return d, nil
}

func printTable(r results) {
	fmt.Println()
	fmt.Println("| row       | setting                              | result                                   |")
	fmt.Println("|-----------|--------------------------------------|------------------------------------------|")
	fmt.Printf("| admission | %2d senders, signed 2 KB, HTTP        | %8.0f accepted/s, p50 %.1f ms, p99 %.1f ms |\n",
		r.Admission.Senders, r.Admission.PerSecond, r.Admission.P50Ms, r.Admission.P99Ms)
	fmt.Printf("| ceiling   | %2d clients, single-row INSERT        | %8.0f inserts/s                         |\n",
		r.Ceiling.Clients, r.Ceiling.PerSecond)
	fmt.Printf("| ratio     | admission / ceiling                  | %8.2f                                 |\n", r.Ratio)
	fmt.Printf("| dispatch  | %d rows, %d scopes, %d claimers   | %8.0f rows/s, %d order violations, peak RSS %.0f MiB |\n",
		r.Dispatch.Rows, r.Dispatch.Scopes, r.Dispatch.Claimers, r.Dispatch.PerSecond,
		r.Dispatch.OrderViolations, float64(r.Dispatch.PeakRssBytes)/(1<<20))
	fmt.Printf("| dispatch floor | the commits the seed requires (batched claim, batched outcome), %d clients | %8.0f rows/s; dispatch / floor %.2f |\n",
		r.DispatchFloor.Clients, r.DispatchFloor.PerSecond, ratioOf(r.Dispatch.PerSecond, r.DispatchFloor.PerSecond))
	fmt.Printf("| pipeline  | %d s, %d senders, real handler      | %8.0f handled/s, p99 %.1f ms, backlog at end %d, peak RSS %.0f MiB |\n",
		r.Pipeline.Seconds, r.Pipeline.Senders, r.Pipeline.HandledPerSecond, r.Pipeline.P99Ms, r.Pipeline.BacklogAtEnd,
		float64(r.Pipeline.PeakRssBytes)/(1<<20))
	fmt.Printf("| pipeline floor | the commits the seed requires, %d clients | %8.0f deliveries/s; pipeline / floor %.2f |\n",
		r.PipelineFloor.Clients, r.PipelineFloor.PerSecond, ratioOf(r.Pipeline.HandledPerSecond, r.PipelineFloor.PerSecond))
	// River keeps no order: it is the unordered reference, so dispatch / river is what per-scope
	// order (the oldest row of a scope first, one leased row per scope) costs, not a target.
	fmt.Printf("| river     | %d no-op jobs, River (unordered reference), its bench fetch settings | %8.0f jobs/s; the cost of order: dispatch / river %.2f |\n",
		r.River.Jobs, r.River.PerSecond, ratioOf(r.Dispatch.PerSecond, r.River.PerSecond))
	fmt.Printf("| hot scope | %d rows, %d behind a waiting head | %8.0f rows/s, %.2f of the same dispatch without it |\n",
		r.HotScope.Rows, r.HotScope.HotRows, r.HotScope.PerSecond, r.HotScope.Ratio)
	printMixRows(r)
}

func ratioOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// createDatabase makes a fresh database next to the admin URL's and migrates it.
func createDatabase(ctx context.Context, admin, name string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	if err := migrate(ctx, u.String()); err != nil {
		drop()
		return "", nil, err
	}
	return u.String(), drop, nil
}
