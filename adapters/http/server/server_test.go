package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
)

var metricsHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, "# metrics here\nwebhook_received_total 0\n")
})

func ready(ctx context.Context) error { return nil }

// call drives h with one request and returns status and body.
func call(h http.Handler, method, path, body string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

var _ = Describe("HTTP server", func() {
	var (
		logs *observer.ObservedLogs
		log  *zap.Logger
	)
	BeforeEach(func() {
		var core zapcore.Core
		core, logs = observer.New(zapcore.DebugLevel)
		log = zap.New(core)
	})

	newServer := func(check server.ReadinessCheck, cfg server.Config, regs ...server.Registrar) *server.Server {
		if cfg.Addr == "" {
			cfg.Addr = "127.0.0.1:0"
		}
		s, err := server.New(cfg, log, check, metricsHandler, regs...)
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	Describe("GET /healthz", func() {
		It("answers 200 while the process runs, even when the database is down", func() {
			s := newServer(func(context.Context) error { return errors.New("db down") }, server.Config{})
			code, body := call(s.Handler(), "GET", "/healthz", "")
			Expect(code).To(Equal(200))
			Expect(body).To(MatchJSON(`{"status":"ok"}`))
		})
	})

	Describe("GET /readyz", func() {
		It("answers 200 when the readiness check passes", func() {
			code, body := call(newServer(ready, server.Config{}).Handler(), "GET", "/readyz", "")
			Expect(code).To(Equal(200))
			Expect(body).To(MatchJSON(`{"status":"ok"}`))
		})

		It("answers 503 not-ready when the check fails, keeping the cause in the log", func() {
			s := newServer(func(context.Context) error { return errors.New("2 migrations pending") }, server.Config{})
			code, body := call(s.Handler(), "GET", "/readyz", "")
			Expect(code).To(Equal(503))
			Expect(body).To(MatchJSON(`{"error":"not-ready"}`))
			Expect(body).NotTo(ContainSubstring("migrations"))
			Expect(logs.FilterMessage("not ready").Len()).To(Equal(1))
		})

		It("gives the check a deadline and answers 503 when the database does not answer in time", func() {
			var deadline time.Time
			s := newServer(func(ctx context.Context) error {
				deadline, _ = ctx.Deadline()
				<-ctx.Done() // a database that never answers
				return ctx.Err()
			}, server.Config{ReadyTimeout: 50 * time.Millisecond})
			start := time.Now()
			code, _ := call(s.Handler(), "GET", "/readyz", "")
			Expect(code).To(Equal(503))
			Expect(deadline).To(BeTemporally("~", start.Add(50*time.Millisecond), 40*time.Millisecond))
		})

		It("runs the check at most once a second however often it is asked, answering from the last state", func() {
			var checks atomic.Int64
			s := newServer(func(context.Context) error {
				checks.Add(1)
				return nil
			}, server.Config{})
			// A hundred hits spread over a few hundred milliseconds (a busy load balancer).
			start := time.Now()
			for range 100 {
				code, _ := call(s.Handler(), "GET", "/readyz", "")
				Expect(code).To(Equal(200))
				time.Sleep(3 * time.Millisecond)
			}
			// The first hit waits for the first check; the others answer from its state and
			// start at most one refresh once it is a second old.
			Expect(checks.Load()).To(BeNumerically("<=", 2+int64(time.Since(start)/time.Second)))
			Eventually(func() int64 {
				call(s.Handler(), "GET", "/readyz", "")
				return checks.Load()
			}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(BeNumerically(">=", 2))
		})

		It("does not hold a request for a check running in the background", func() {
			var (
				calls   atomic.Int64
				blocked = make(chan struct{})
			)
			s := newServer(func(ctx context.Context) error {
				if calls.Add(1) == 1 {
					return nil
				}
				select { // every later check hangs until the spec ends
				case <-blocked:
				case <-ctx.Done():
				}
				return errors.New("database gone")
			}, server.Config{ReadyTimeout: time.Minute})
			DeferCleanup(func() { close(blocked); Expect(s.Shutdown(context.Background())).To(Succeed()) })
			code, _ := call(s.Handler(), "GET", "/readyz", "")
			Expect(code).To(Equal(200))
			Eventually(func() int64 {
				code, _ := call(s.Handler(), "GET", "/readyz", "")
				Expect(code).To(Equal(200), "the last state, while the refresh hangs")
				return calls.Load()
			}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(BeEquivalentTo(2))
			for range 20 {
				code, _ := call(s.Handler(), "GET", "/readyz", "")
				Expect(code).To(Equal(200))
			}
			Expect(calls.Load()).To(BeEquivalentTo(2), "one check at a time")
		})

		It("uses a two-second deadline by default", func() {
			var left time.Duration
			s := newServer(func(ctx context.Context) error {
				d, _ := ctx.Deadline()
				left = time.Until(d)
				return nil
			}, server.Config{})
			call(s.Handler(), "GET", "/readyz", "")
			Expect(left).To(BeNumerically("~", 2*time.Second, 200*time.Millisecond))
		})
	})

	Describe("GET /metrics", func() {
		It("serves the metrics handler", func() {
			code, body := call(newServer(ready, server.Config{}).Handler(), "GET", "/metrics", "")
			Expect(code).To(Equal(200))
			Expect(body).To(ContainSubstring("webhook_received_total 0"))
		})
	})

	Describe("registrars", func() {
		It("mounts the routes of every API package", func() {
			s := newServer(ready, server.Config{},
				func(r gin.IRouter) error {
					r.POST("/webhooks/github", func(c *gin.Context) { c.JSON(202, gin.H{"status": "accepted"}) })
					return nil
				},
				func(r gin.IRouter) error {
					r.GET("/api/x", func(c *gin.Context) { c.JSON(200, gin.H{"ok": true}) })
					return nil
				},
			)
			code, _ := call(s.Handler(), "POST", "/webhooks/github", "{}")
			Expect(code).To(Equal(202))
			code, _ = call(s.Handler(), "GET", "/api/x", "")
			Expect(code).To(Equal(200))
		})

		It("fails the server when an API package cannot register", func() {
			_, err := server.New(server.Config{Addr: ":0"}, log, ready, metricsHandler,
				func(gin.IRouter) error { return errors.New("two hooks for provider GITHUB") })
			Expect(err).To(MatchError(ContainSubstring("two hooks for provider GITHUB")))
		})

		It("answers unknown routes and methods with the JSON error shape", func() {
			s := newServer(ready, server.Config{})
			code, body := call(s.Handler(), "GET", "/nope", "")
			Expect(code).To(Equal(404))
			Expect(body).To(MatchJSON(`{"error":"not-found"}`))
			code, body = call(s.Handler(), "POST", "/healthz", "")
			Expect(code).To(Equal(405))
			Expect(body).To(MatchJSON(`{"error":"method-not-allowed"}`))
		})
	})

	Describe("a panicking handler", func() {
		It("answers 500 internal and logs the route, never the body or the panic text", func() {
			s := newServer(ready, server.Config{}, func(r gin.IRouter) error {
				r.POST("/boom", func(c *gin.Context) {
					b, _ := io.ReadAll(c.Request.Body)
					panic("failed with token=" + string(b))
				})
				return nil
			})
			code, body := call(s.Handler(), "POST", "/boom", "sekrit-payload")
			Expect(code).To(Equal(500))
			Expect(body).To(MatchJSON(`{"error":"internal"}`))
			entries := logs.FilterMessage("panic in http handler").All()
			Expect(entries).To(HaveLen(1))
			Expect(entries[0].ContextMap()).To(HaveKeyWithValue("route", "/boom"))
			for _, e := range logs.All() {
				for k, v := range e.ContextMap() {
					Expect(k + "=" + toString(v)).NotTo(ContainSubstring("sekrit-payload"))
				}
			}
		})
	})

	Describe("request logging", func() {
		It("writes one debug line per request with route and status", func() {
			s := newServer(ready, server.Config{})
			call(s.Handler(), "GET", "/healthz?token=abc", "")
			entries := logs.FilterMessage("http request").All()
			Expect(entries).To(HaveLen(1))
			Expect(entries[0].Level).To(Equal(zapcore.DebugLevel))
			Expect(entries[0].ContextMap()).To(HaveKeyWithValue("route", "/healthz"))
			Expect(entries[0].ContextMap()).To(HaveKeyWithValue("status", int64(200)))
			Expect(toString(entries[0].ContextMap())).NotTo(ContainSubstring("token=abc"))
		})
	})

	Describe("Start and Shutdown", func() {
		BeforeEach(func() {
			leaks := goleak.IgnoreCurrent()
			// Registered first, so it runs after every cleanup the spec registers (LIFO).
			DeferCleanup(func() {
				Eventually(func() error { return goleak.Find(leaks) }).WithTimeout(5 * time.Second).Should(Succeed())
			})
		})

		It("serves on the listener and refuses a busy address at Start", func() {
			s := newServer(ready, server.Config{})
			Expect(s.Start()).To(Succeed())
			DeferCleanup(func() { Expect(s.Shutdown(context.Background())).To(Succeed()) })

			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Get("http://" + s.Addr() + "/healthz")
			Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(200))

			busy := newServer(ready, server.Config{Addr: s.Addr()})
			Expect(busy.Start()).To(MatchError(ContainSubstring("listen on")))
		})

		It("lets a request in flight finish, then refuses new connections", func() {
			entered, release := make(chan struct{}), make(chan struct{})
			s := newServer(ready, server.Config{}, func(r gin.IRouter) error {
				r.GET("/slow", func(c *gin.Context) {
					close(entered)
					<-release
					c.JSON(202, gin.H{"status": "accepted"})
				})
				return nil
			})
			Expect(s.Start()).To(Succeed())
			addr := s.Addr()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

			type result struct {
				code int
				err  error
			}
			inFlight := make(chan result, 1)
			go func() {
				resp, err := client.Get("http://" + addr + "/slow")
				if err != nil {
					inFlight <- result{err: err}
					return
				}
				_ = resp.Body.Close()
				inFlight <- result{code: resp.StatusCode}
			}()
			Eventually(entered).Should(BeClosed())

			shutdown := make(chan error, 1)
			go func() { shutdown <- s.Shutdown(context.Background()) }()
			// New connections are refused while the old request still runs.
			Eventually(func() error {
				resp, err := client.Get("http://" + addr + "/healthz")
				if err == nil {
					_ = resp.Body.Close()
				}
				return err
			}).Should(HaveOccurred())
			Consistently(shutdown, 100*time.Millisecond).ShouldNot(Receive())

			close(release)
			var r result
			Eventually(inFlight).Should(Receive(&r))
			Expect(r.err).NotTo(HaveOccurred())
			Expect(r.code).To(Equal(202))
			Eventually(shutdown).Should(Receive(BeNil()))
		})

		It("cuts requests off when the grace period ends", func() {
			release := make(chan struct{})
			DeferCleanup(func() { close(release) })
			entered := make(chan struct{})
			s := newServer(ready, server.Config{}, func(r gin.IRouter) error {
				r.GET("/stuck", func(c *gin.Context) {
					close(entered)
					select {
					case <-release:
					case <-c.Request.Context().Done():
					}
				})
				return nil
			})
			Expect(s.Start()).To(Succeed())
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := client.Get("http://" + s.Addr() + "/stuck"); err == nil {
					_ = resp.Body.Close()
				}
			}()
			Eventually(entered).Should(BeClosed())
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			Expect(s.Shutdown(ctx)).To(MatchError(context.DeadlineExceeded))
			Eventually(done).Should(BeClosed())
		})
	})
})

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		var b strings.Builder
		for k, val := range x {
			b.WriteString(k + "=" + toString(val) + " ")
		}
		return b.String()
	default:
		return ""
	}
}
