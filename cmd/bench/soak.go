package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The soak (make soak): the server as `hephaestus serve` wires it, on a throwaway durable
// cluster, fed the mix at a fixed share of the pipeline mix's measured capacity for
// -soak-minutes, with the replay window and the dead retention shortened so that retention
// deletes continuously once the first minutes have ended. Each minute it records the
// contract's figures; it writes them to soak-results.json, a table to stdout and a chart to
// soak-results.svg, and judges the flatness criteria (soakjudge.go).

var soakSettings struct {
	minutes         int
	share           float64
	rate            float64 // deliveries per second; 0: share × measured capacity
	out             string
	replayWindow    time.Duration
	deadRetention   time.Duration
	retentionPeriod time.Duration
}

// soakMinute is one minute of the soak (CONTRACT.md, `make soak`).
type soakMinute struct {
	HandledPerSecond float64 `json:"handledPerSecond"`
	P50Ms            float64 `json:"p50Ms"`
	P99Ms            float64 `json:"p99Ms"`
	Backlog          int     `json:"backlog"`
	RetentionDeleted int64   `json:"retentionDeleted"`
	RetentionMs      int64   `json:"retentionMs"`
	InboxBytes       int64   `json:"inboxBytes"`
	MirrorBytes      int64   `json:"mirrorBytes"`
	DeadTuples       int64   `json:"deadTuples"`
	RssBytes         int64   `json:"rssBytes"`
	Goroutines       int     `json:"goroutines"`
	// Printed, not part of the contract's JSON: the rate offered, the longest retention batch,
	// deliveries the pacer could not start on time.
	offered                  float64
	longestBatchMs           int64
	late                     int64
	checkpoints, autovacuums int64 // cumulative
}

type soakResults struct {
	Minutes []soakMinute `json:"minutes"`
}

// retentionLog gathers the server's "retention deleted ended deliveries" lines from its
// stderr; every other line at WARN or above goes on to the bench's stderr.
type retentionLog struct {
	mu                        sync.Mutex
	deleted, ms, longestMs    int64
	totalDeleted, totalPasses int64
}

func (l *retentionLog) take() (deleted, ms, longest int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deleted, ms, longest = l.deleted, l.ms, l.longestMs
	l.deleted, l.ms, l.longestMs = 0, 0, 0
	return
}

func (l *retentionLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var rec struct {
			Level          string `json:"level"`
			Msg            string `json:"msg"`
			Deleted        int64  `json:"deleted"`
			Ms             int64  `json:"ms"`
			LongestBatchMs int64  `json:"longestBatchMs"`
		}
		if json.Unmarshal(line, &rec) != nil {
			fmt.Fprintf(os.Stderr, "%s\n", line)
			continue
		}
		switch {
		case rec.Msg == "retention deleted ended deliveries":
			l.mu.Lock()
			l.deleted += rec.Deleted
			l.ms += rec.Ms
			l.longestMs = max(l.longestMs, rec.LongestBatchMs)
			l.totalDeleted += rec.Deleted
			l.totalPasses++
			l.mu.Unlock()
		case rec.Level != "info" && rec.Level != "debug":
			fmt.Fprintf(os.Stderr, "%s\n", line)
		}
	}
}

// runSoak is the -soak phase: a fresh database, the capacity of the pipeline mix measured
// for capacitySeconds (unless -soak-rate gives the rate), then the soak itself.
func runSoak(senders, capacitySeconds int) error {
	s := soakSettings
	if s.minutes < 3 {
		return errors.New("-soak-minutes must be at least 3 (a warm-up minute, then first and last minutes to compare)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.minutes)*time.Minute+15*time.Minute)
	defer cancel()
	admin := os.Getenv("HEPHAESTUS_TEST_DATABASE_URL")
	if admin == "" {
		admin = os.Getenv("DATABASE_URL")
	}
	if admin == "" {
		return errors.New("no database: run `make soak` (it starts a throwaway durable cluster), or set DATABASE_URL")
	}
	mix, err := buildMix(mixCorpusDir(mixSettings.corpus), mixSettings.seed)
	if err != nil {
		return err
	}
	dbURL, drop, err := createDatabase(ctx, admin, "hx_soak")
	if err != nil {
		return err
	}
	defer drop()
	if err := seedBenchRoute(ctx, dbURL); err != nil {
		return err
	}
	pool, err := openPool(ctx, dbURL, int32(senders+pipelineClaimers+4))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := seedPipelineRepos(ctx, pool); err != nil {
		return fmt.Errorf("seed repositories: %w", err)
	}
	feed := mixFeed(mix)
	rate := s.rate
	if rate <= 0 {
		fmt.Fprintf(os.Stderr, "soak: measuring the pipeline mix's capacity for %d s (%d senders, deliveries of%s)…\n",
			capacitySeconds, senders, mixShares(mix))
		p, _, _, err := pipelineRound(ctx, dbURL, pool, senders, capacitySeconds, feed)
		if err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
		rate = s.share * p.HandledPerSecond
		fmt.Fprintf(os.Stderr, "soak: capacity %.0f handled/s; feeding %.0f %% of it, %.0f deliveries/s\n",
			p.HandledPerSecond, 100*s.share, rate)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE provider_event`); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: %d minutes at %.0f deliveries/s; replay window %s, dead retention %s, retention every %s\n",
		s.minutes, rate, s.replayWindow, s.deadRetention, s.retentionPeriod)

	logs := &retentionLog{}
	pr, pw := io.Pipe()
	go logs.read(pr)
	defer pw.Close()
	server, err := startServeChild(ctx, dbURL, []string{
		"HEPHAESTUS_INTEGRATION_CONSUMER_REPLAY_WINDOW=" + s.replayWindow.String(),
		"HEPHAESTUS_INTEGRATION_CONSUMER_DEAD_RETENTION=" + s.deadRetention.String(),
		"HEPHAESTUS_INTEGRATION_CONSUMER_RETENTION_INTERVAL=" + s.retentionPeriod.String(),
		envServeLogLevel + "=info",
	}, pw)
	if err != nil {
		return err
	}
	defer func() { _, _ = server.stop() }()
	if err := feed.prepare(ctx, pool, server.addr); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	minutes, err := soak(ctx, pool, server, feed, senders, rate, s.minutes, logs)
	if _, serr := server.stop(); err == nil && serr != nil {
		err = fmt.Errorf("server: %w", serr)
	}
	if err != nil {
		return err
	}
	printSoak(minutes)
	b, err := json.MarshalIndent(soakResults{Minutes: minutes}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", s.out, err)
	}
	chart := strings.TrimSuffix(s.out, filepath.Ext(s.out)) + ".svg"
	if err := os.WriteFile(chart, soakChart(minutes, rate), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", chart, err)
	}
	abs, _ := filepath.Abs(s.out)
	fmt.Printf("\nwritten to %s and %s\n", abs, chart)
	fmt.Printf("retention: %d rows deleted in %d passes\n", logs.totalDeleted, logs.totalPasses)
	verdicts := judgeFlatness(minutes)
	fmt.Println("\nflatness, after the warm-up minute:")
	failed := 0
	for _, v := range verdicts {
		mark := "holds"
		if !v.holds {
			mark, failed = "DOES NOT HOLD", failed+1
		}
		fmt.Printf("  %-13s %-58s %s\n", mark, v.name, v.detail)
	}
	if failed > 0 {
		fmt.Printf("%d of %d criteria do not hold\n", failed, len(verdicts))
	}
	return nil
}

// soak feeds the server at rate deliveries a second from senders paced senders and samples
// each minute.
func soak(ctx context.Context, pool *pgxpool.Pool, server *serveChild, feed pipelineFeed, senders int, rate float64, minutes int, logs *retentionLog) ([]soakMinute, error) {
	var (
		mu        sync.Mutex
		latencies []time.Duration // of the current minute
		work      = make(chan int, senders)
		sendErr   = make(chan error, senders)
		late      atomic.Int64
		wg        sync.WaitGroup
	)
	for range senders {
		wg.Go(func() {
			c := feed.client(server.addr)
			defer c.close()
			for i := range work {
				t := time.Now()
				if err := c.send(i); err != nil {
					sendErr <- err
					return
				}
				d := time.Since(t)
				mu.Lock()
				latencies = append(latencies, d)
				mu.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	var pacer sync.WaitGroup
	pacer.Go(func() {
		// Delivery k is due at start + k/rate; one that finds every sender busy waits for one
		// and counts as late, so a server that slows down shows as late deliveries and a
		// growing p99, not as a lower offered rate.
		defer close(work)
		start := time.Now()
		for k := 0; ; k++ {
			due := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-stop:
					return
				case <-time.After(d):
				}
			}
			select {
			case work <- k:
				continue
			default:
			}
			late.Add(1)
			select {
			case <-stop:
				return
			case work <- k:
			}
		}
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		pacer.Wait()
		wg.Wait()
	}()

	_, lastDone, err := serverMetrics(ctx, server.addr)
	if err != nil {
		return nil, err
	}
	lastAt := time.Now()
	var out []soakMinute
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for m := 1; m <= minutes; m++ {
		select {
		case err := <-sendErr:
			return nil, fmt.Errorf("sender: %w", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		mu.Lock()
		l := latencies
		latencies = nil
		mu.Unlock()
		var sm soakMinute
		// The server's own count: the DONE rows' ended_at would miss an outcome whose commit
		// came after the minute's read with an ended_at inside it.
		var done float64
		var err error
		if sm.Goroutines, done, err = serverMetrics(ctx, server.addr); err != nil {
			return nil, err
		}
		sm.HandledPerSecond = (done - lastDone) / time.Since(lastAt).Seconds()
		lastDone, lastAt = done, time.Now()
		slices.Sort(l)
		if len(l) > 0 {
			sm.P50Ms, sm.P99Ms = ms(l[len(l)/2]), ms(l[len(l)*99/100])
		}
		sm.offered = float64(len(l)) / 60
		sm.late = late.Swap(0)
		if sm.Backlog, err = backlogOf(ctx, pool); err != nil {
			return nil, err
		}
		sm.RetentionDeleted, sm.RetentionMs, sm.longestBatchMs = logs.take()
		if err := pool.QueryRow(ctx, soakSizes).Scan(&sm.InboxBytes, &sm.MirrorBytes, &sm.DeadTuples,
			&sm.checkpoints, &sm.autovacuums); err != nil {
			return nil, err
		}
		sm.RssBytes = processRSS(server.cmd.Process.Pid)
		fmt.Fprintf(os.Stderr, "  minute %d: %.0f handled/s (%.0f offered, %d late), p99 %.1f ms, backlog %d, retention %d rows in %d ms, inbox %.1f MiB, RSS %.0f MiB\n",
			m, sm.HandledPerSecond, sm.offered, sm.late, sm.P99Ms, sm.Backlog, sm.RetentionDeleted, sm.RetentionMs,
			float64(sm.InboxBytes)/(1<<20), float64(sm.RssBytes)/(1<<20))
		out = append(out, sm)
	}
	return out, nil
}

// soakSizes reads the inbox's bytes (provider_event and the tables whose rows retention
// deletes with it: steps, attempts; tables, indexes and TOAST), the mirror's (every provider's
// mirror tables), the inbox tables' dead tuples, and the cluster's checkpoints and the inbox
// tables' autovacuums so far (printed, to tell a stall's cause).
const soakSizes = `
SELECT
  (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
   WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
     AND c.relname IN ('provider_event', 'provider_event_step', 'provider_event_attempt', 'provider_event_scope')),
  (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
   WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
     AND (c.relname LIKE 'github\_%' OR c.relname LIKE 'gitlab\_%' OR c.relname LIKE 'slack\_%' OR c.relname LIKE 'outline\_%')),
  (SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_user_tables
   WHERE relname IN ('provider_event', 'provider_event_step', 'provider_event_attempt', 'provider_event_scope')),
  (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter),
  (SELECT coalesce(sum(autovacuum_count), 0)::bigint FROM pg_stat_user_tables
   WHERE relname IN ('provider_event', 'provider_event_step', 'provider_event_attempt', 'provider_event_scope'))`

// processRSS is the resident set of process pid (Linux /proc), 0 when unknown.
func processRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// serverMetrics reads, from the server's /metrics, go_goroutines (-1 when unknown) and the
// deliveries handled to DONE so far (integration_consumer_handled_total{outcome="done"} summed
// over the providers; counted once the outcome is written).
func serverMetrics(ctx context.Context, addr string) (goroutines int, done float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return -1, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, 0, err
	}
	defer resp.Body.Close()
	goroutines = -1
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("go_goroutines ")); ok {
			if n, err := strconv.ParseFloat(string(rest), 64); err == nil {
				goroutines = int(n)
			}
		}
		if bytes.HasPrefix(line, []byte("integration_consumer_handled_total{")) && bytes.Contains(line, []byte(`outcome="done"`)) {
			if i := bytes.LastIndexByte(line, ' '); i > 0 {
				if n, err := strconv.ParseFloat(string(line[i+1:]), 64); err == nil {
					done += n
				}
			}
		}
	}
	return goroutines, done, sc.Err()
}
