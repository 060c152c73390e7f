// Package consumer runs one server's part of the inbox: a claim loop that leases the oldest due
// row of free scopes, workers that dispatch each row to its provider handler, an outcome writer
// that batches the results, a renewer, a reaper, the retention loop and the inbox gauge. The
// domain (domain/inbox) decides every transition; the store (ports.InboxStore) writes it.
//
// One file per loop, River's internal/maintenance style: this file starts and stops them
// (Run), claim.go, work.go (dispatch), outcomes.go, renew.go, reap.go, retention.go, gauge.go
// and shutdown.go (the final release). Every loop whose store call fails goes through one
// helper, backOff in backoff.go: log at WARN, wait a jittered growing delay, stop with ctx.
package consumer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Consumer is one server's claimers, renewer, reaper and retention. Run it once per process.
type Consumer struct {
	cfg      Config
	timing   inbox.LeaseTiming
	policy   inbox.RetryPolicy
	store    ports.InboxStore
	handlers ports.HandlerRegistry
	wake     *Signal
	clock    ports.Clock
	log      ports.Logger
	metrics  ports.ConsumerMetrics

	running atomic.Bool
}

// New validates cfg (after defaults) and returns a consumer. wake is the signal admission
// notifies after its commit; every dependency is required.
func New(cfg Config, store ports.InboxStore, handlers ports.HandlerRegistry, wake *Signal,
	clock ports.Clock, log ports.Logger, metrics ports.ConsumerMetrics) (*Consumer, error) {
	if store == nil || handlers == nil || wake == nil || clock == nil || log == nil || metrics == nil {
		return nil, errors.New("consumer: store, handlers, wake signal, clock, logger and metrics are required")
	}
	cfg.setDefaults()
	timing, policy, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noTracer{}
	}
	return &Consumer{cfg: cfg, timing: timing, policy: policy, store: store, handlers: handlers,
		wake: wake, clock: clock, log: log, metrics: metrics}, nil
}

// Config returns the configuration in use, defaults applied.
func (c *Consumer) Config() Config { return c.cfg }

// outcome is one handled attempt waiting for the outcome writer.
type outcome struct {
	ack      ports.Ack
	provider string
	decision inbox.Decision
	// deletedOwn: a committed step of the handler deleted its own event on purpose, so a row
	// found gone is successful handling rather than an erasure after the last write.
	deletedOwn bool
	span       ports.AttemptSpan // ended once the outcome is written
}

// claimedRow is a claimed row on its way to a worker, with when its claim statement ran (the
// attempt's trace records it).
type claimedRow struct {
	ports.Claimed
	claimStart, claimEnd time.Time
}

// run is the state of one Run: created when it starts, gone when it returns.
type run struct {
	*Consumer
	held *leases
	// contention remembers consecutive contention retries per row (their delay grows);
	// due wakes the claim loop when a retry scheduled inside the poll interval is due.
	contention *contentionMemory
	due        *dueWake
	work       chan claimedRow // claim loop → workers; closed by the claim loop
	outcomes   chan outcome    // workers → outcome writer; never closed (see writeOutcomes)
	// slotFreed wakes the claim loop when a worker took its hands off a row; nudge when rows or
	// scopes may have become claimable (outcomes written, leases reaped).
	slotFreed chan struct{}
	nudge     chan struct{}
	// handlerCtx is the parent of every handler's context. It outlives Run's context by the
	// shutdown grace, so a stopping server lets running handlers finish briefly.
	handlerCtx context.Context

	capacity int // Claimers + ClaimAhead: rows handed to workers and not yet returned
	maxHeld  int // rows held at most, including those waiting for their outcome write
	refill   int // with every worker busy, claim again once this many slots are free

	mu       sync.Mutex
	busy     int // slots reserved by a claim or holding a row a worker has not finished
	reserved int // slots reserved by claims in flight

	// claimGate lets the release of unheld leases see no claim in flight: each claim holds it
	// shared from its statement until its rows are in held, the release exclusively (orphans.go).
	claimGate sync.RWMutex
	// claimsUncertain is set when a claim statement failed: it may have committed while its
	// answer was lost, leaving leases this server does not know it holds.
	claimsUncertain atomic.Bool
	// outage is the last span in which this server's store calls failed because the database
	// could not be reached (zero: none since start). The reaper spares the budget of leases
	// that were running during it (reap.go).
	outageMu sync.Mutex
	outage   inbox.Outage
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run claims and handles rows until ctx is cancelled (the SIGTERM path), then stops claiming,
// waits up to ShutdownGrace for running handlers, cancels the ones still running, writes the
// outcomes of those that finished and releases every lease it still holds without counting
// the attempt. It returns after every goroutine it started has ended; the error is non-nil only
// when the final release failed (those leases then expire and the reaper takes them back).
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("consumer: Run is already running")
	}
	defer c.running.Store(false)

	capacity := c.cfg.Claimers + c.cfg.ClaimAhead
	maxHeld := capacity + c.cfg.OutcomeBatch
	detached := context.WithoutCancel(ctx)
	handlerCtx, cancelHandlers := context.WithCancel(detached)
	defer cancelHandlers()
	r := &run{
		Consumer: c, held: newLeases(), contention: newContentionMemory(),
		work:      make(chan claimedRow, capacity),
		outcomes:  make(chan outcome, maxHeld), // one outcome per held row at most: sends never block
		slotFreed: make(chan struct{}, 1),
		nudge:     make(chan struct{}, 1),
		capacity:  capacity, maxHeld: maxHeld, handlerCtx: handlerCtx,
		// Three quarters of a batch: with fast handlers the slots free up together and a claim
		// then carries nearly a full batch; with slow ones, a quarter of a batch still waits for
		// the workers while the next claim runs (docs/operations/performance.md).
		refill: max(1, 3*min(c.cfg.ClaimBatch, capacity)/4),
	}
	r.due = newDueWake(func() { signal(r.nudge) })
	defer r.due.stop()

	// The renewer and the outcome writer outlive ctx: leases must be kept and outcomes written
	// until the shutdown below has settled every row.
	keepCtx, stopKeep := context.WithCancel(detached)
	defer stopKeep()
	writerCtx, stopWriter := context.WithCancel(detached)
	defer stopWriter()
	writerStop := make(chan struct{})
	// A claim statement is not cancelled by the stop itself (see claimLoop), only bounded.
	claimCtx, stopClaims := context.WithCancel(detached)
	defer stopClaims()

	var workers, keeper, loops sync.WaitGroup
	for range c.cfg.Claimers {
		workers.Go(func() { r.workLoop(ctx) })
	}
	workersDone := make(chan struct{})
	go func() { workers.Wait(); close(workersDone) }()
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); r.writeOutcomes(writerCtx, writerStop) }()
	keeper.Go(func() { r.renewLoop(keepCtx) })
	loops.Go(func() {
		var claims sync.WaitGroup
		for range c.cfg.ClaimLoops {
			claims.Go(func() { r.claimLoop(ctx, claimCtx) })
		}
		claims.Wait()
		close(r.work)
	})
	loops.Go(func() { r.reapLoop(ctx) })
	loops.Go(func() { r.retentionLoop(ctx) })
	loops.Go(func() { r.gaugeLoop(ctx) })
	c.log.Infow("consumer started", "owner", c.cfg.Owner, "claimers", c.cfg.Claimers)

	<-ctx.Done()
	c.log.Infow("consumer stopping", "owner", c.cfg.Owner, "held", r.held.len())
	// Within StopBudget, every wait ends by waitsEnd and the release by releaseEnd.
	releaseCtx := detached
	bound := func(d time.Duration) time.Duration { return d }
	if c.cfg.StopBudget > 0 {
		releaseEnd := time.Now().Add(c.cfg.StopBudget)
		waitsEnd := releaseEnd.Add(-c.cfg.StopBudget / 5)
		bound = func(d time.Duration) time.Duration { return max(0, min(d, time.Until(waitsEnd))) }
		var cancelRelease context.CancelFunc
		releaseCtx, cancelRelease = context.WithDeadline(detached, releaseEnd)
		defer cancelRelease()
	}
	loopsDone := make(chan struct{})
	go func() { loops.Wait(); close(loopsDone) }()
	if !waitFor(loopsDone, bound(c.cfg.ShutdownTimeout)) {
		stopClaims()
		<-loopsDone
	} // the claim loop has closed r.work: no new rows
	if !waitFor(workersDone, bound(c.cfg.ShutdownGrace)) {
		// Handlers that return now because of this cancellation are released, not recorded.
		cancelHandlers()
		if !waitFor(workersDone, bound(c.cfg.ShutdownGrace)) {
			c.log.Errorw("handlers ignore their cancelled context; releasing their leases anyway",
				"owner", c.cfg.Owner)
		}
	}
	close(writerStop)
	if !waitFor(writerDone, bound(c.cfg.ShutdownTimeout)) {
		stopWriter()
		<-writerDone
	}
	stopKeep()
	keeper.Wait()
	err := r.releaseHeld(releaseCtx)
	// Run owns every handler goroutine and waits even for one that ignores cancellation, but
	// not past the stop budget: the process is exiting, and a kill would cost more.
	select {
	case <-workersDone:
	case <-releaseCtx.Done():
		c.log.Errorw("stopped with a handler still running past the stop budget", "owner", c.cfg.Owner)
	}
	c.log.Infow("consumer stopped", "owner", c.cfg.Owner)
	return err
}
