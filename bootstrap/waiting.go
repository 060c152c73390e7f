package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
)

// waitingServer answers on HTTP_ADDR while the start waits for a multi-host DATABASE_URL to
// offer a host that accepts writes (docs/operations/database-failover.md): /healthz 200,
// /readyz 503 with the last connection error in the log, /metrics, and 503 {"error":"retry"}
// with Retry-After on the webhook and API paths, as the running server answers while no
// primary accepts writes. It starts at the first failed attempt and stops before the real
// server listens.
type waitingServer struct {
	addr    string
	log     *zap.Logger
	metrics http.Handler

	mu      sync.Mutex
	last    error
	srv     *server.Server
	failed  bool // it could not listen: the start goes on waiting without it
	stopped bool
}

func newWaitingServer(addr string, log *zap.Logger, metrics http.Handler) *waitingServer {
	return &waitingServer{addr: addr, log: log, metrics: metrics}
}

// notReady records a failed attempt and starts the server on the first one.
func (w *waitingServer) notReady(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = err
	if w.srv != nil || w.failed || w.stopped {
		return
	}
	retry := func(c *gin.Context) {
		c.Header("Retry-After", "5")
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "retry"})
	}
	srv, serr := server.New(server.Config{Addr: w.addr}, w.log.Named("http"), w.ready, w.metrics,
		func(r gin.IRouter) error {
			r.Any("/webhooks/*path", retry)
			r.Any("/api/*path", retry)
			return nil
		})
	if serr == nil {
		serr = srv.Start()
	}
	if serr != nil {
		w.failed = true
		w.log.Warn("cannot answer not-ready while waiting for the database", zap.Error(serr))
		return
	}
	w.srv = srv
}

func (w *waitingServer) ready(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Errorf("no database host accepts writes yet: %w", w.last)
}

// stop shuts the server down (if it started) so the real one can listen on the address.
func (w *waitingServer) stop() error {
	w.mu.Lock()
	srv := w.srv
	w.stopped = true
	w.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
