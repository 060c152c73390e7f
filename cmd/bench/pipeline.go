package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

type pipelineResult struct {
	Seconds          int     `json:"seconds"`
	Senders          int     `json:"senders"`
	HandledPerSecond float64 `json:"handledPerSecond"`
	P99Ms            float64 `json:"p99Ms"`
	BacklogAtEnd     int     `json:"backlogAtEnd"`
	PeakRssBytes     int64   `json:"peakRssBytes"`
}

type pipelineFloorResult struct {
	Clients   int     `json:"clients"`
	PerSecond float64 `json:"perSecond"`
}

// pipelineClaimers is the pipeline floor's claimer count: the server's default claimers.
const pipelineClaimers = 8

// pipelineRepos is how many repositories the pipeline's deliveries are spread over: each is a
// subscription of the benchmark workspace and a scope of its own.
const pipelineRepos = 100

// Backlog watermarks of the pipeline row: senders pause while the backlog (QUEUED and LEASED
// rows) is above pipelineHigh and resume below pipelineLow, so that a server that handles less
// than it admits runs at a bounded, steady backlog instead of a growing one.
const (
	pipelineHigh = 2000
	pipelineLow  = 1000
	// pipelineWarmup is left out of the measured window: the server starts, connections open.
	pipelineWarmup = 5 * time.Second
)

// repoPayload is issuePayload for repository repositoryID+repo.
func repoPayload(n, repo int) []byte {
	var doc map[string]any
	_ = json.Unmarshal(issuePayload(n), &doc)
	r := doc["repository"].(map[string]any)
	r["id"] = repositoryID + repo
	r["name"] = fmt.Sprintf("hello-%d", repo)
	r["full_name"] = fmt.Sprintf("octo/hello-%d", repo)
	b, _ := json.Marshal(doc)
	return b
}

// seedPipelineRepos subscribes the benchmark workspace to pipelineRepos-1 more repositories.
// The backfill jobs the subscriptions queue are marked done: the row measures webhooks, and
// the provider API root is a closed port, so the jobs would only retry transport errors
// beside the measured traffic.
func seedPipelineRepos(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `
INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
SELECT c.id, c.workspace_id, 'GITHUB', 'repository', ($1::bigint + g)::text, 'octo/hello-' || g
FROM connection c, generate_series(1, $2::int - 1) g
WHERE c.source_key = '4242'
ON CONFLICT DO NOTHING`, repositoryID, pipelineRepos)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `
UPDATE sync_job SET state = 'DONE', leased_until = NULL, leased_by = NULL, finished_at = now()
WHERE kind = 'BACKFILL' AND state IN ('QUEUED', 'RUNNING')`)
	return err
}

// backlogOf counts QUEUED and LEASED rows (over their partial indexes: the cost follows the
// backlog, not the handled rows).
func backlogOf(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM provider_event WHERE state = 'QUEUED')
	                                + (SELECT count(*) FROM provider_event WHERE state = 'LEASED')`).Scan(&n)
	return n, err
}

// handledSince counts the rows that ended DONE after $1 and up to now (the database clock),
// over ix_provider_event_ended, and returns now.
const handledSince = `
WITH c AS (SELECT clock_timestamp() AS t)
SELECT (SELECT count(*) FROM provider_event e WHERE e.state = 'DONE' AND e.ended_at > $1 AND e.ended_at <= c.t), c.t
FROM c`

// pipelineSample is one second of the pipeline row: the backlog at its end, rows handled in it.
type pipelineSample struct {
	at      time.Duration
	backlog int
	handled int
}

// pipelineFeed is the traffic of a pipeline round: prepare runs once the server is ready
// (nil: nothing to prepare), and client gives each sender its own connection to addr, whose
// send(i) delivers the round's i-th delivery and requires it stored once.
type pipelineFeed struct {
	prepare func(ctx context.Context, pool *pgxpool.Pool, addr string) error
	client  func(addr string) feedClient
}

type feedClient interface {
	send(i int) error
	close()
}

// issuesFeed is the pipeline row's traffic: signed `issues` deliveries over pipelineRepos
// repositories.
func issuesFeed() pipelineFeed {
	payloads := make([][]byte, 4*pipelineRepos)
	for i := range payloads {
		payloads[i] = repoPayload(i+1, i%pipelineRepos)
	}
	return pipelineFeed{client: func(addr string) feedClient { return &issuesClient{newSender(addr), payloads} }}
}

type issuesClient struct {
	*sender
	payloads [][]byte
}

func (c *issuesClient) send(i int) error { return c.sender.send(c.payloads[i%len(c.payloads)]) }

// serveChild is a running `hephaestus serve` child process.
type serveChild struct {
	addr    string
	cmd     *exec.Cmd
	stopped bool
}

// startServeChild starts the server as bootstrap wires it in a child process on a free
// loopback port, with env added to the child's environment, and waits until it is ready.
func startServeChild(ctx context.Context, dbURL string, env []string, stderr io.Writer) (*serveChild, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	server := exec.CommandContext(ctx, self, "-phase", "serve", "-db", dbURL, "-addr", addr)
	server.Stderr = stderr
	if stderr == nil {
		server.Stderr = os.Stderr
	}
	server.Env = append(os.Environ(), serveSecretsEnv()...)
	server.Env = append(server.Env, env...)
	if err := server.Start(); err != nil {
		return nil, err
	}
	s := &serveChild{addr: addr, cmd: server}
	if err := waitReady(ctx, addr); err != nil {
		_, _ = s.stop()
		return nil, err
	}
	return s, nil
}

// stop ends the server with SIGTERM and returns its peak RSS.
func (s *serveChild) stop() (int64, error) {
	if s.stopped {
		return 0, nil
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	err := s.cmd.Wait()
	var rss int64
	if ru, ok := s.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	return rss, err
}

// pipelineRound runs the server in a child process, sends feed's deliveries (signed `issues`
// deliveries over pipelineRepos repositories for the pipeline row) from senders for warm-up
// plus seconds, and reads, every second, the backlog and the rows the server handled (DONE
// rows ended in that second, by the database clock, over ix_provider_event_ended). Senders
// pause above the high watermark. The rate is the rows handled in the measured window over
// its length.
func pipelineRound(ctx context.Context, dbURL string, pool *pgxpool.Pool, senders int, seconds int, feed pipelineFeed) (pipelineResult, []pipelineSample, []time.Duration, error) {
	if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
		return pipelineResult{}, nil, nil, err
	}
	server, err := startServeChild(ctx, dbURL, nil, nil)
	if err != nil {
		return pipelineResult{}, nil, nil, err
	}
	defer func() { _, _ = server.stop() }()
	stopServer, addr := server.stop, server.addr
	if feed.prepare != nil {
		if err := feed.prepare(ctx, pool, addr); err != nil {
			return pipelineResult{}, nil, nil, fmt.Errorf("prepare: %w", err)
		}
	}

	var (
		paused    atomic.Bool
		sent      atomic.Int64
		stopSend  = make(chan struct{})
		latencies = make([][]time.Duration, senders)
		sendErr   = make(chan error, senders)
		wg        sync.WaitGroup
	)
	for w := range senders {
		wg.Go(func() {
			c := feed.client(addr)
			defer c.close()
			for {
				select {
				case <-stopSend:
					return
				default:
				}
				if paused.Load() {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				i := int(sent.Add(1))
				t := time.Now()
				if err := c.send(i); err != nil {
					sendErr <- err
					return
				}
				latencies[w] = append(latencies[w], time.Since(t))
			}
		})
	}

	var (
		samples      []pipelineSample
		windowStart  time.Time // database clock
		start        = time.Now()
		total        = pipelineWarmup + time.Duration(seconds)*time.Second
		last         time.Time
		sampleTicker = time.NewTicker(200 * time.Millisecond)
	)
	defer sampleTicker.Stop()
	if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&last); err != nil {
		return pipelineResult{}, nil, nil, err
	}
	nextSecond := start.Add(time.Second)
	for time.Since(start) < total {
		select {
		case err := <-sendErr:
			close(stopSend)
			wg.Wait()
			return pipelineResult{}, nil, nil, fmt.Errorf("sender: %w", err)
		case <-sampleTicker.C:
		}
		backlog, err := backlogOf(ctx, pool)
		if err != nil {
			return pipelineResult{}, nil, nil, err
		}
		switch {
		case backlog > pipelineHigh:
			paused.Store(true)
		case backlog < pipelineLow:
			paused.Store(false)
		}
		if time.Now().Before(nextSecond) {
			continue
		}
		nextSecond = nextSecond.Add(time.Second)
		var handled int
		var now time.Time
		if err := pool.QueryRow(ctx, handledSince, last).Scan(&handled, &now); err != nil {
			return pipelineResult{}, nil, nil, err
		}
		last = now
		at := time.Since(start)
		samples = append(samples, pipelineSample{at: at, backlog: backlog, handled: handled})
		if at >= pipelineWarmup {
			if windowStart.IsZero() {
				windowStart = now // the first sample after warm-up opens the window
			}
		}
	}
	close(stopSend)
	wg.Wait()
	// Outcomes that ended inside the window and committed after its last sample count too.
	var windowRows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_event
		WHERE state = 'DONE' AND ended_at > $1 AND ended_at <= $2`, windowStart, last).Scan(&windowRows); err != nil {
		return pipelineResult{}, nil, nil, err
	}
	backlog, err := backlogOf(ctx, pool)
	if err != nil {
		return pipelineResult{}, nil, nil, err
	}
	printRetries(ctx, addr)
	rss, err := stopServer()
	if err != nil {
		return pipelineResult{}, nil, nil, fmt.Errorf("server: %w", err)
	}
	var dead int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state = 'DEAD'`).Scan(&dead); err != nil {
		return pipelineResult{}, nil, nil, err
	}
	if dead > 0 {
		return pipelineResult{}, nil, nil, fmt.Errorf("%d deliveries dead: the handler failed", dead)
	}
	window := last.Sub(windowStart)
	return pipelineResult{
		Seconds: seconds, Senders: senders,
		HandledPerSecond: float64(windowRows) / window.Seconds(),
		BacklogAtEnd:     backlog, PeakRssBytes: rss,
	}, samples, slices.Concat(latencies...), nil
}

func waitReady(ctx context.Context, addr string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the pipeline's server did not become ready in 60 s")
}

// benchPipelineAndFloor alternates pipeline and pipeline floor rounds of seconds each.
func benchPipelineAndFloor(ctx context.Context, dbURL string, senders, seconds, rounds int) (pipelineResult, pipelineFloorResult, error) {
	pool, err := openPool(ctx, dbURL, int32(senders+pipelineClaimers+4))
	if err != nil {
		return pipelineResult{}, pipelineFloorResult{}, err
	}
	defer pool.Close()
	if err := seedPipelineRepos(ctx, pool); err != nil {
		return pipelineResult{}, pipelineFloorResult{}, fmt.Errorf("seed repositories: %w", err)
	}
	var (
		res                 = pipelineResult{Seconds: seconds, Senders: senders}
		latencies           []time.Duration
		handledRate         float64
		floorDone           int
		floorTime           time.Duration
		minBacklog, maxBack = -1, 0
	)
	for round := 1; round <= rounds; round++ {
		p, samples, l, err := pipelineRound(ctx, dbURL, pool, senders, seconds, issuesFeed())
		if err != nil {
			return pipelineResult{}, pipelineFloorResult{}, fmt.Errorf("pipeline round %d: %w", round, err)
		}
		n, d, err := pipelineFloorRound(ctx, dbURL, pool, senders, pipelineClaimers, seconds, issuesFloorRows(), true)
		if err != nil {
			return pipelineResult{}, pipelineFloorResult{}, fmt.Errorf("pipeline floor round %d: %w", round, err)
		}
		if statementFloor {
			sn, sd, err := pipelineFloorRound(ctx, dbURL, pool, senders, pipelineClaimers, seconds, issuesFloorRows(), false)
			if err != nil {
				return pipelineResult{}, pipelineFloorResult{}, fmt.Errorf("pipeline statement floor round %d: %w", round, err)
			}
			fmt.Fprintf(os.Stderr, "  round %d: the handler's own statements straight into PostgreSQL: %.0f/s\n", round, float64(sn)/sd.Seconds())
		}
		line := ""
		for _, s := range samples {
			line += fmt.Sprintf(" %d/%d", s.handled, s.backlog)
			if s.at >= pipelineWarmup {
				if minBacklog < 0 || s.backlog < minBacklog {
					minBacklog = s.backlog
				}
				maxBack = max(maxBack, s.backlog)
			}
		}
		fmt.Fprintf(os.Stderr, "  round %d: handled/backlog each second:%s\n", round, line)
		floorRate := float64(n) / d.Seconds()
		fmt.Fprintf(os.Stderr, "  round %d: pipeline %.0f handled/s, backlog at end %d, peak RSS %.0f MiB; floor %.0f/s; ratio %.2f\n",
			round, p.HandledPerSecond, p.BacklogAtEnd, float64(p.PeakRssBytes)/(1<<20), floorRate, p.HandledPerSecond/floorRate)
		handledRate += p.HandledPerSecond / float64(rounds)
		latencies = append(latencies, l...)
		floorDone += n
		floorTime += d
		res.BacklogAtEnd = p.BacklogAtEnd
		res.PeakRssBytes = max(res.PeakRssBytes, p.PeakRssBytes)
	}
	fmt.Fprintf(os.Stderr, "  pipeline backlog over the measured windows: %d to %d rows (watermarks %d/%d)\n",
		minBacklog, maxBack, pipelineLow, pipelineHigh)
	slices.Sort(latencies)
	res.HandledPerSecond = handledRate
	if len(latencies) > 0 {
		res.P99Ms = ms(latencies[len(latencies)*99/100])
	}
	return res, pipelineFloorResult{Clients: senders, PerSecond: float64(floorDone) / floorTime.Seconds()}, nil
}

// printRetries prints the server's retried and dropped outcomes by cause (its /metrics; the
// series that are not zero), on stderr: a
// pipeline that retries contention (a fence found a row busy) waits for its retry delay.
func printRetries(ctx context.Context, addr string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if (strings.HasPrefix(line, "integration_consumer_retry_total") || strings.HasPrefix(line, "integration_message_dropped")) &&
			!strings.HasSuffix(line, " 0") {
			fmt.Fprintf(os.Stderr, "  server: %s\n", line)
		}
	}
}
