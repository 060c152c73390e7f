package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
)

var webhookSecret = []byte("bench-webhook-secret")

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// benchAdmissionAndCeiling measures the admission and ceiling rows in alternating rounds: each
// round sends its share of the deliveries through the real receiver on loopback (no claimers
// run, so the row measures admission alone), then inserts the same share straight into
// PostgreSQL, each on an emptied inbox. Alternating keeps the two rows under the same machine
// conditions: on a shared two-core machine one long run of each saw ceilings between 4,700
// and 7,300 inserts/s within minutes. Each row's rate is its deliveries over its summed time,
// and the latencies are those of every admission round.
func benchAdmissionAndCeiling(ctx context.Context, dbURL string, senders, deliveries, rounds int) (admissionResult, ceilingResult, error) {
	pool, err := openPool(ctx, dbURL, int32(senders+8))
	if err != nil {
		return admissionResult{}, ceilingResult{}, err
	}
	defer pool.Close()
	admissionPool, err := admissionstore.OpenPool(ctx, dbURL)
	if err != nil {
		return admissionResult{}, ceilingResult{}, err
	}
	defer admissionPool.Close()
	ceilingPool, err := openPool(ctx, dbURL, int32(senders))
	if err != nil {
		return admissionResult{}, ceilingResult{}, err
	}
	defer ceilingPool.Close()
	var workspaceID int64
	if err := pool.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'bench'`).Scan(&workspaceID); err != nil {
		return admissionResult{}, ceilingResult{}, err
	}
	addr, store, stop, err := serveReceiver(ctx, pool, admissionPool)
	if err != nil {
		return admissionResult{}, ceilingResult{}, err
	}
	defer stop()

	payloads := make([][]byte, 64)
	for i := range payloads {
		payloads[i] = issuePayload(i + 1)
	}
	if admissionProfile != "" {
		f, err := os.Create(admissionProfile)
		if err != nil {
			return admissionResult{}, ceilingResult{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return admissionResult{}, ceilingResult{}, err
		}
		defer pprof.StopCPUProfile()
	}
	if allocationProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			if f, err := os.Create(allocationProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				_ = f.Close()
			}
		}()
	}
	var (
		latencies                  []time.Duration
		admissionTime, ceilingTime time.Duration
		admitted                   int // deliveries of the rounds so far, in each row
	)
	for round := 1; round <= rounds; round++ {
		n := deliveries / rounds
		if round == rounds {
			n = deliveries - admitted
		}
		if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
			return admissionResult{}, ceilingResult{}, err
		}
		before := sampleProcess()
		groups0, grouped0 := store.Groups()
		db0, dbOK := databaseCPU(ctx, pool)
		a, l, err := admissionRound(ctx, pool, addr, payloads, senders, n)
		if err != nil {
			return admissionResult{}, ceilingResult{}, fmt.Errorf("admission round %d: %w", round, err)
		}
		cost := sampleProcess().since(before, n)
		db1, _ := databaseCPU(ctx, pool)
		groups1, grouped1 := store.Groups()
		if _, err := pool.Exec(ctx, `TRUNCATE provider_event CASCADE`); err != nil {
			return admissionResult{}, ceilingResult{}, err
		}
		ceilingBefore := sampleProcess()
		c, err := ceilingRound(ctx, ceilingPool, workspaceID, payloads[0], senders, admitted, n)
		if err != nil {
			return admissionResult{}, ceilingResult{}, fmt.Errorf("ceiling round %d: %w", round, err)
		}
		ceilingCost := sampleProcess().since(ceilingBefore, n)
		db2, _ := databaseCPU(ctx, pool)
		fmt.Fprintf(os.Stderr, "  round %d: admission %.0f/s (%s), ceiling %.0f/s, ratio %.2f\n", round,
			float64(n)/a.Seconds(), cost, float64(n)/c.Seconds(), c.Seconds()/a.Seconds())
		if dbOK {
			// Where the two rows differ: the database's work per row (the TRUNCATE between
			// them is in the ceiling side's reading, a few µs a row) and this process's.
			perRow := func(d time.Duration) int64 { return (d / time.Duration(n)).Microseconds() }
			fmt.Fprintf(os.Stderr, "    CPU µs per delivery: admission database %d, receiver and senders %d; ceiling database %d, client %d\n",
				perRow(db1-db0), cost.cpu.Microseconds(), perRow(db2-db1), ceilingCost.cpu.Microseconds())
		}
		if groups := groups1 - groups0; groups > 0 {
			fmt.Fprintf(os.Stderr, "    group transactions: %d for %d deliveries (%.1f a transaction)\n",
				groups, grouped1-grouped0, float64(grouped1-grouped0)/float64(groups))
		}
		latencies = append(latencies, l...)
		admissionTime += a
		ceilingTime += c
		admitted += n
	}
	slices.Sort(latencies)
	return admissionResult{
			Senders:   senders,
			PerSecond: float64(admitted) / admissionTime.Seconds(),
			P50Ms:     ms(latencies[len(latencies)/2]),
			P99Ms:     ms(latencies[len(latencies)*99/100]),
		}, ceilingResult{
			Clients:   senders,
			PerSecond: float64(admitted) / ceilingTime.Seconds(),
		}, nil
}

// admissionRound sends n signed deliveries from senders goroutines and requires n stored rows.
func admissionRound(ctx context.Context, pool *pgxpool.Pool, addr string, payloads [][]byte, senders, n int) (time.Duration, []time.Duration, error) {
	latencies := make([][]time.Duration, senders)
	clients := make([]*sender, senders)
	for w := range clients {
		clients[w] = newSender(addr)
		defer clients[w].close()
	}
	elapsed, err := concurrently(senders, n, func(w, i int) error {
		t := time.Now()
		if err := clients[w].send(payloads[i%len(payloads)]); err != nil {
			return err
		}
		latencies[w] = append(latencies[w], time.Since(t))
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_event`).Scan(&stored); err != nil {
		return 0, nil, err
	}
	if stored != n {
		return 0, nil, fmt.Errorf("stored %d rows for %d accepted deliveries", stored, n)
	}
	return elapsed, slices.Concat(latencies...), nil
}

// concurrently runs do for i = 1…n from workers goroutines (w is the worker's index) and
// answers how long all took, or the first error (each worker stops at its own).
func concurrently(workers, n int, do func(w, i int) error) (time.Duration, error) {
	var next atomic.Int64
	errs := make(chan error, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := do(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	return elapsed, <-errs
}

// processSample is this process's CPU time and heap allocations at one moment: the receiver
// and its senders share the process, so a round's difference is their cost per delivery.
type processSample struct {
	cpu    time.Duration
	allocs uint64
}

func sampleProcess() processSample {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return processSample{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), allocs: m.Mallocs}
}

type processCost struct {
	cpu    time.Duration
	allocs float64
}

func (s processSample) since(before processSample, deliveries int) processCost {
	return processCost{
		cpu:    (s.cpu - before.cpu) / time.Duration(deliveries),
		allocs: float64(s.allocs-before.allocs) / float64(deliveries),
	}
}

func (c processCost) String() string {
	return fmt.Sprintf("receiver and senders: %d µs CPU, %.0f allocations a delivery", c.cpu.Microseconds(), c.allocs)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sender is one GitHub-like sender: a keep-alive HTTP/1.1 connection to the receiver. Each
// delivery gets a fresh delivery id and its own HMAC-SHA256 signature, goes out in one write
// and its answer is read with net/http's response parser. It writes the request itself rather
// than through http.Client because the load generator shares the machine's cores with the
// receiver it measures: http.Client's per-request goroutine hand-offs and allocations cost
// several times this sender's CPU (docs/operations/performance.md), CPU the receiver then
// lacks. GitHub is not a Go client inside the receiver's process either.
type sender struct {
	rawConn
	mac hash.Hash
	req []byte
	sum []byte
}

func newSender(addr string) *sender {
	return &sender{rawConn: rawConn{addr: addr}, mac: hmac.New(sha256.New, webhookSecret)}
}

// rawConn is one keep-alive connection to the receiver: the senders write each request
// themselves and read its answer here.
type rawConn struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
}

func (c *rawConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// open dials the receiver unless the connection is open.
func (c *rawConn) open() error {
	if c.conn != nil {
		return nil
	}
	conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
	if err != nil {
		return err
	}
	c.conn, c.br = conn, bufio.NewReader(conn)
	return nil
}

// exchange writes req and requires 202 with one stored row; what names the delivery in the
// error. The connection is closed after any failure and whenever the receiver closes it.
func (c *rawConn) exchange(req []byte, what string) error {
	if err := c.conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return err
	}
	if _, err := c.conn.Write(req); err != nil {
		c.close()
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		return err
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.Close {
		c.close()
	}
	if resp.StatusCode != http.StatusAccepted || !bytes.Contains(answer, []byte(`"stored":1`)) {
		return fmt.Errorf("%s answered %d %s", what, resp.StatusCode, answer)
	}
	return err
}

// send delivers body and requires 202 with one stored row.
func (c *sender) send(body []byte) error {
	if err := c.open(); err != nil {
		return err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	c.mac.Reset()
	c.mac.Write(body)
	c.sum = c.mac.Sum(c.sum[:0])
	b := append(c.req[:0], "POST /webhooks/github HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\nUser-Agent: GitHub-Hookshot/bench\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nX-GitHub-Event: issues\r\nX-GitHub-Delivery: "...)
	b = hex.AppendEncode(b, id[:])
	b = append(b, "\r\nX-Hub-Signature-256: sha256="...)
	b = hex.AppendEncode(b, c.sum)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.req = b
	return c.exchange(b, "delivery")
}

// serveReceiver wires the production receiving path: gin, the webhook routes, the admission
// service and the PostgreSQL admission store on its own pool, as `hephaestus serve` wires them.
func serveReceiver(ctx context.Context, pool, admissionPool *pgxpool.Pool) (string, *admissionstore.Store, func(), error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secrets.NewAESGCM(key)
	if err != nil {
		return "", nil, nil, err
	}
	directory, err := managementstore.NewSourceDirectory(pool, box, managementstore.Config{Kinds: github.Module{}.Kinds()})
	if err != nil {
		return "", nil, nil, err
	}
	store, err := admissionstore.New(admissionPool)
	if err != nil {
		return "", nil, nil, err
	}
	svc, err := admission.New(admission.Config{DefaultSourceServerURL: "https://github.com"}, store, directory, consumer.NewSignal(), telemetry.NewMetrics(),
		zap.NewNop().Sugar(), systemClock{})
	if err != nil {
		return "", nil, nil, err
	}
	hook, err := github.NewWebhook(github.Config{WebhookSecret: webhookSecret})
	if err != nil {
		return "", nil, nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	if err := webhookapi.Register(engine, svc, webhookapi.Hooks{hook}, webhookapi.Config{}); err != nil {
		return "", nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	srv := &http.Server{Handler: engine, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return ln.Addr().String(), store, stop, nil
}

// ceilingRound inserts the same payload with the same unique index straight into PostgreSQL:
// n autocommit INSERT … ON CONFLICT DO NOTHING of one row each into workspaceID's inbox,
// clients at a time, with delivery keys after firstKey.
func ceilingRound(ctx context.Context, pool *pgxpool.Pool, workspaceID int64, body []byte, clients, firstKey, n int) (time.Duration, error) {
	return concurrently(clients, n, func(_, i int) error {
		tag, err := pool.Exec(ctx, `
INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, headers)
VALUES ($1, 'GITHUB', 'issues', $2, 'ws:1:github:repository:1296269', 'github:repository:1296269', $3, '{}')
ON CONFLICT DO NOTHING`, workspaceID, fmt.Sprintf("ceiling-%d", firstKey+i), body)
		if err == nil && tag.RowsAffected() != 1 {
			err = errors.New("insert stored nothing")
		}
		return err
	})
}

func openPool(ctx context.Context, dbURL string, size int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = size
	cfg.MinConns = size
	return pgxpool.NewWithConfig(ctx, cfg)
}
