package server

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// readyInterval is the most often the readiness check runs, however often /readyz is asked:
// the endpoint needs no token, so each hit must not be a database round trip.
const readyInterval = time.Second

// readiness is /readyz's state: the last check's outcome, refreshed in the background when a
// request finds it older than readyInterval. Only the very first request waits for a check
// (there is no state yet); every later one answers from the state at once, and at most one
// check runs at a time.
type readiness struct {
	check   ReadinessCheck
	timeout time.Duration
	log     *zap.Logger
	now     func() time.Time

	mu         sync.Mutex
	err        error
	checkedAt  time.Time // when the last check ended; zero before the first
	refreshing bool
	first      chan struct{} // closed when the first check ended
	checks     sync.WaitGroup
}

func newReadiness(check ReadinessCheck, timeout time.Duration, log *zap.Logger) *readiness {
	return &readiness{check: check, timeout: timeout, log: log, now: time.Now, first: make(chan struct{})}
}

// state answers the last check's outcome, starting a check in the background when the state
// is older than readyInterval. Before the first check ended it waits for it, within ctx.
func (r *readiness) state(ctx context.Context) error {
	r.mu.Lock()
	if !r.refreshing && (r.checkedAt.IsZero() || r.now().Sub(r.checkedAt) >= readyInterval) {
		r.refreshing = true
		r.checks.Add(1)
		go r.refresh()
	}
	r.mu.Unlock()
	select {
	case <-r.first:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// refresh runs one check on its own deadline: no request's cancellation ends it.
func (r *readiness) refresh() {
	defer r.checks.Done()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	err := r.check(ctx)
	cancel()
	if err != nil {
		r.log.Warn("not ready", zap.Error(err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err, r.checkedAt, r.refreshing = err, r.now(), false
	select {
	case <-r.first:
	default:
		close(r.first)
	}
}

// wait waits for a check still running (Shutdown: no goroutine outlives the server).
func (r *readiness) wait() { r.checks.Wait() }
