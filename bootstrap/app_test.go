package bootstrap

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/stdlib"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	Expect(ln.Close()).To(Succeed())
	return addr
}

// timeline records events in the order they happen, across goroutines.
type timeline struct {
	mu     sync.Mutex
	events []string
}

func (t *timeline) add(e string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, e)
}

func (t *timeline) all() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.events...)
}

func (t *timeline) has(e string) func() bool {
	return func() bool {
		for _, x := range t.all() {
			if x == e {
				return true
			}
		}
		return false
	}
}

// runnerFunc adapts a function to Runner.
type runnerFunc func(ctx context.Context) error

func (f runnerFunc) Run(ctx context.Context) error { return f(ctx) }

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func get(url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

var _ = Describe("App", func() {
	var (
		cfg  Config
		base string
	)
	BeforeEach(func(ctx SpecContext) {
		leaks := goleak.IgnoreCurrent()
		// Registered first, so it runs after every other cleanup: Run owns every goroutine it
		// started and must have waited for all of them.
		DeferCleanup(func() {
			Eventually(func() error { return goleak.Find(leaks) }).WithTimeout(10 * time.Second).Should(Succeed())
		})
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })

		addr := freeAddr()
		base = "http://" + addr
		cfg, err = LoadConfig(func(name string) string {
			return map[string]string{
				EnvDatabaseURL:    db.URL,
				EnvHTTPAddr:       addr,
				EnvAdminToken:     "admin-token-for-the-specs",
				EnvCredentialsKey: base64.StdEncoding.EncodeToString(make([]byte, 32)),
			}[name]
		})
		Expect(err).NotTo(HaveOccurred())
	})

	It("serves the routes it wires, ready once migrated, and stops cleanly on cancellation", func() {
		log := zap.NewNop()
		app, err := InitializeApp(cfg, log)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		result := make(chan error, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			result <- app.Run(ctx)
		}()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed()) })

		Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(30 * time.Second).Should(Equal(200))
		Expect(get(base + "/healthz")).To(Equal(200))
		Expect(get(base + "/metrics")).To(Equal(200))

		// The management API with the configured admin token.
		req, _ := http.NewRequest("POST", base+"/api/admin/workspaces", strings.NewReader(`{"slug":"acme","name":"Acme"}`))
		req.Header.Set("Authorization", "Bearer admin-token-for-the-specs")
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(201))

		// The webhook receiver: mounted (an unsigned delivery is refused, not unknown).
		resp, err = client.Post(base+"/webhooks/github", "application/json", strings.NewReader(`{}`))
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(401))

		cancel()
		Eventually(result).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
		_, err = get(base + "/healthz")
		Expect(err).To(HaveOccurred(), "nothing listens after Run returned")
	})

	It("stops admitting and the consumer in parallel, lets requests in flight finish, then releases the graph", func() {
		var tl timeline
		entered, release := make(chan struct{}), make(chan struct{})
		app := &App{cfg: cfg, log: zap.NewNop(), metrics: telemetry.NewMetrics(),
			build: func(ctx context.Context, in graphInput) (*services, func(), error) {
				Expect(in.Pool).NotTo(BeNil())
				return &services{
					registrars: []server.Registrar{func(r gin.IRouter) error {
						r.GET("/slow", func(c *gin.Context) {
							close(entered)
							<-release
							tl.add("request finished")
							c.JSON(202, gin.H{"status": "accepted"})
						})
						return nil
					}},
					runners: []Runner{runnerFunc(func(ctx context.Context) error {
						tl.add("consumer started")
						<-ctx.Done()
						tl.add("consumer stopped")
						return ctx.Err()
					})},
				}, func() { tl.add("graph released") }, nil
			}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		result := make(chan error, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			result <- app.Run(ctx)
		}()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed()) })
		Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(30 * time.Second).Should(Equal(200))
		Eventually(tl.has("consumer started")).Should(BeTrue())

		slow := make(chan int, 1)
		go func() {
			code, err := get(base + "/slow")
			if err != nil {
				code = -1
			}
			slow <- code
		}()
		Eventually(entered).Should(BeClosed())

		cancel() // SIGTERM
		Eventually(func() error { _, err := get(base + "/healthz"); return err }).Should(HaveOccurred(),
			"new requests are refused at once")
		Eventually(tl.has("consumer stopped")).Should(BeTrue(),
			"the consumer drains while admission drains, not after it")
		Consistently(result, 200*time.Millisecond).ShouldNot(Receive(), "Run waits for the request in flight")

		close(release)
		Eventually(slow).Should(Receive(Equal(202)), "the request in flight finishes")
		Eventually(result).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
		Expect(tl.all()).To(Equal([]string{"consumer started", "consumer stopped", "request finished", "graph released"}))
	})

	It("finishes the whole stop within HEPHAESTUS_SHUTDOWN_TIMEOUT even when a request never ends", func() {
		short := cfg
		short.ShutdownTimeout = 2 * time.Second
		entered, release := make(chan struct{}), make(chan struct{})
		DeferCleanup(func() { close(release) })
		app := &App{cfg: short, log: zap.NewNop(), metrics: telemetry.NewMetrics(),
			build: func(ctx context.Context, in graphInput) (*services, func(), error) {
				return &services{
					registrars: []server.Registrar{func(r gin.IRouter) error {
						r.GET("/stuck", func(c *gin.Context) {
							close(entered)
							select {
							case <-release:
							case <-c.Request.Context().Done():
							}
						})
						return nil
					}},
					runners: []Runner{runnerFunc(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })},
				}, func() {}, nil
			}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		result := make(chan error, 1)
		go func() { result <- app.Run(ctx) }()
		Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(30 * time.Second).Should(Equal(200))
		go func() { _, _ = get(base + "/stuck") }()
		Eventually(entered).Should(BeClosed())

		start := time.Now()
		cancel() // SIGTERM
		Eventually(result).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		Expect(time.Since(start)).To(BeNumerically("<", short.ShutdownTimeout))
	})

	It("stops with an error when the consumer fails on its own", func() {
		app := &App{cfg: cfg, log: zap.NewNop(), metrics: telemetry.NewMetrics(),
			build: func(ctx context.Context, in graphInput) (*services, func(), error) {
				return &services{runners: []Runner{runnerFunc(func(context.Context) error {
					return errors.New("inbox store gone")
				})}}, func() {}, nil
			}}
		err := app.Run(context.Background())
		Expect(err).To(MatchError(ContainSubstring("inbox store gone")))
	})

	It("refuses to start without a credentials key when DATABASE_URL is set", func() {
		cfg.CredentialsKey = nil
		app, err := InitializeApp(cfg, zap.NewNop())
		Expect(err).NotTo(HaveOccurred())
		err = app.Run(context.Background())
		var ce *ConfigError
		Expect(errors.As(err, &ce)).To(BeTrue())
		Expect(ce.Problems[0].Variable).To(Equal(EnvCredentialsKey))
	})
})

var _ = Describe("Readiness", func() {
	var d *database
	BeforeEach(func(ctx SpecContext) {
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		pool, err := db.Pool(ctx, 2)
		Expect(err).NotTo(HaveOccurred())
		d = &database{pool: pool, sqlDB: stdlib.OpenDBFromPool(pool), server: &dbServer{}}
		DeferCleanup(func() { _ = d.close() })
	})

	It("is ready when the database answers and every migration is applied", func(ctx SpecContext) {
		Expect(d.ready(ctx)).To(Succeed())
	})

	It("is not ready while a migration is pending", func(ctx SpecContext) {
		_, err := d.pool.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.ready(ctx)).To(MatchError(ContainSubstring("1 migrations pending")))
	})

	It("is not ready when the database does not answer", func(ctx SpecContext) {
		d.pool.Close()
		Expect(d.ready(ctx)).To(MatchError(ContainSubstring("database ping")))
	})
})
