// Package consumer runs one server's part of the inbox: a claim loop that leases the oldest due
// row of free scopes, workers that dispatch each row to its provider handler, an outcome writer
// that batches the results, a renewer, a reaper, the retention loop and the inbox gauge. The
// domain (domain/inbox) decides every transition; the store (ports.InboxStore) writes it.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
}

// run is the state of one Run: created when it starts, gone when it returns.
type run struct {
	*Consumer
	held     *leases
	work     chan ports.Claimed // claim loop → workers; closed by the claim loop
	outcomes chan outcome       // workers → outcome writer; never closed (see writeOutcomes)
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
		Consumer: c, held: newLeases(),
		work:      make(chan ports.Claimed, capacity),
		outcomes:  make(chan outcome, maxHeld), // one outcome per held row at most: sends never block
		slotFreed: make(chan struct{}, 1),
		nudge:     make(chan struct{}, 1),
		capacity:  capacity, maxHeld: maxHeld, handlerCtx: handlerCtx,
		refill: max(1, min(c.cfg.ClaimBatch, capacity)/2),
	}

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
	loops.Go(func() { r.claimLoop(ctx, claimCtx) })
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

func waitFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// storeCtx bounds one store call.
func (r *run) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.StoreTimeout)
}

// reserve takes the slots the next claim fills, 0 meaning wait for a worker. While every
// worker is busy, a claim waits until the claimed-ahead rows ran down to half, so one statement
// refills many slots instead of one statement per freed slot.
func (r *run) reserve() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	free := min(r.capacity-r.busy, r.maxHeld-r.held.len()-r.reserved, r.cfg.ClaimBatch)
	if free <= 0 || (r.busy >= r.cfg.Claimers && free < r.refill) {
		return 0
	}
	r.busy += free
	r.reserved += free
	return free
}

// settle gives back the reserved slots a claim did not fill.
func (r *run) settle(reserved, claimed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserved -= reserved
	r.busy -= reserved - claimed
}

// claimLoop leases rows for the workers: min(free slots, batch) per statement, when woken,
// when outcomes freed scopes, every poll interval, and at once again after a full claim.
//
// Claim statements run on claimCtx, which the stop does not cancel: a claim that committed
// while its caller gave up would leave leases nobody renews or releases, costing their rows a
// budget unit at expiry. Rows a claim returns after ctx ended are released with the others.
func (r *run) claimLoop(ctx, claimCtx context.Context) {
	defer close(r.work)
	bo := newBackoff(r.cfg.BackoffMin, r.cfg.BackoffMax)
	poll := time.NewTimer(r.cfg.PollInterval)
	defer poll.Stop()
	for ctx.Err() == nil {
		n := r.reserve()
		if n == 0 {
			select {
			case <-ctx.Done():
				return
			case <-r.slotFreed:
			case <-r.nudge:
			}
			continue
		}
		cctx, cancel := r.storeCtx(claimCtx)
		claimed, err := r.store.Claim(cctx, r.cfg.Owner, n, r.timing.Duration())
		cancel()
		for _, c := range claimed {
			r.held.add(c)
			r.work <- c // the slot was reserved: never blocks
		}
		r.settle(n, len(claimed))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bo.delay()
			r.log.Warnw("claiming failed; backing off", "owner", r.cfg.Owner, "retryIn", d, "error", err.Error())
			if !sleep(ctx, d) {
				return
			}
			continue
		}
		bo.reset()
		if len(claimed) == n {
			continue // a full claim: more rows may be waiting
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return
		case <-r.wake.C():
		case <-r.nudge:
		case <-poll.C:
		}
	}
}

// workLoop runs handlers for claimed rows until the claim loop closes r.work. Once ctx ended no
// new handler starts: the row stays held and is released.
func (r *run) workLoop(ctx context.Context) {
	for c := range r.work {
		if ctx.Err() == nil {
			r.handle(c)
		}
		r.mu.Lock()
		r.busy--
		r.mu.Unlock()
		signal(r.slotFreed)
	}
}

func (r *run) handle(c ports.Claimed) {
	d := c.Delivery
	ack := ports.Ack{ID: d.ID(), Epoch: d.Lease().Epoch()}
	label := d.Provider().Label()
	attempt := d.Attempt()

	var err error
	if h, ok := r.handlers.Lookup(d.Provider(), d.EventType()); ok {
		err = r.dispatch(h, c, ack, label)
	} // else: nothing to do for this event type; completed and counted as done
	r.held.handlerReturned(ack.ID)

	if err != nil && r.handlerCtx.Err() != nil {
		// The stopping server cancelled this handler: its lease is released without counting the
		// attempt, like a row whose handler never started.
		return
	}
	now := r.clock.Now()
	if err == nil {
		if cerr := d.Complete(ack.Epoch, now); cerr != nil {
			r.dropInvalid(d, cerr)
			return
		}
		r.outcomes <- outcome{ack: ack, provider: label, decision: inbox.Completed()}
		return
	}
	dec, ferr := d.Fail(ack.Epoch, err, r.policy, now)
	if ferr != nil {
		r.dropInvalid(d, ferr)
		return
	}
	r.logFailure(d, attempt, err, dec)
	if dec.Outcome() == inbox.OutcomeDropped {
		r.held.drop(ack.ID) // nothing is written: the row is another lease's, or gone
		r.metrics.Dropped(label, dec.DropReason())
		r.metrics.Handled(label, inbox.OutcomeDropped.String())
		return
	}
	r.outcomes <- outcome{ack: ack, provider: label, decision: dec}
}

// dispatch runs the handler with its own context: the handler timeout, and whatever
// DispatchContext binds (the step runner's dispatch identity). The context ends when handling
// returns, so no asynchronous work can carry it further.
func (r *run) dispatch(h ports.Handler, c ports.Claimed, ack ports.Ack, label string) error {
	start := time.Now()
	hctx, cancel := context.WithTimeout(r.handlerCtx, r.timing.HandlerTimeout())
	defer cancel()
	if r.cfg.DispatchContext != nil {
		hctx = r.cfg.DispatchContext(hctx, c)
	}
	r.held.started(ack.ID, start.Add(r.timing.HandlerTimeout()))
	err := callHandler(hctx, h, ports.Dispatch{
		Delivery: c.Delivery, WorkspaceID: c.Delivery.WorkspaceID(), Payload: c.Payload, Headers: c.Headers,
	})
	r.metrics.HandlerDuration(label, time.Since(start))
	return err
}

// dropInvalid handles a domain refusal on the claimer's own copy, which holds the lease it was
// claimed with; it means a bug, so the row is left to its lease and the reaper.
func (r *run) dropInvalid(d inbox.Delivery, err error) {
	r.held.drop(d.ID())
	r.log.Errorw("claimed delivery refused its own outcome", "owner", r.cfg.Owner, "id", d.ID(),
		"causeTypes", inbox.CauseTypes(err))
}

// logFailure logs a failed attempt without its message (which can carry payload fragments or
// credentials): sanitized cause types and frames on the first attempt and when the row dies,
// contention at DEBUG.
func (r *run) logFailure(d inbox.Delivery, attempt int, err error, dec inbox.Decision) {
	kv := []any{"owner", r.cfg.Owner, "id", d.ID(), "provider", d.Provider().Label(),
		"eventType", d.EventType(), "attempt", attempt, "class", dec.Class().String()}
	detail := func() []any {
		out := append(kv, "causeTypes", inbox.CauseTypes(err))
		var p *inbox.PanicError
		if errors.As(err, &p) {
			out = append(out, "frames", p.Frames)
		}
		return out
	}
	switch {
	case dec.Class() == inbox.Contention:
		r.log.Debugw("delivery busy; retried at once in order", kv...)
	case dec.Outcome() == inbox.OutcomeDead:
		r.log.Errorw("delivery dead", append(detail(), "errorClass", dec.ErrorClass())...)
	case dec.Outcome() == inbox.OutcomeDropped:
		r.log.Infow("delivery dropped", append(kv, "reason", dec.DropReason())...)
	case attempt <= 1:
		r.log.Warnw("delivery failed on its first attempt; retried", append(detail(), "dueAt", dec.DueAt())...)
	default:
		r.log.Infow("delivery failed; retried", append(kv, "dueAt", dec.DueAt())...)
	}
}

// writeOutcomes batches outcomes into one store write: it flushes when OutcomeBatch are pending
// or OutcomeDelay after the first. A write that fails is retried with backoff until it
// succeeds, so no outcome is lost to an outage; after stop it drains what is left, until ctx
// (the shutdown timeout) ends.
func (r *run) writeOutcomes(ctx context.Context, stop <-chan struct{}) {
	batch := make([]outcome, 0, r.cfg.OutcomeBatch)
	timer := time.NewTimer(r.cfg.OutcomeDelay)
	defer timer.Stop()
	for {
		batch = batch[:0]
		select {
		case o := <-r.outcomes:
			batch = append(batch, o)
		case <-stop:
			r.drainOutcomes(ctx, batch)
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(r.cfg.OutcomeDelay)
	gather:
		for len(batch) < r.cfg.OutcomeBatch {
			select {
			case o := <-r.outcomes:
				batch = append(batch, o)
			case <-timer.C:
				break gather
			case <-stop:
				break gather
			}
		}
		if !r.flush(ctx, batch) {
			return
		}
	}
}

func (r *run) drainOutcomes(ctx context.Context, batch []outcome) {
	for {
		batch = batch[:0]
	drain:
		for len(batch) < r.cfg.OutcomeBatch {
			select {
			case o := <-r.outcomes:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		if len(batch) == 0 || !r.flush(ctx, batch) {
			return
		}
	}
}

// flush writes one batch, retrying until it succeeds or ctx ends (false).
func (r *run) flush(ctx context.Context, batch []outcome) bool {
	results := make([]ports.Result, len(batch))
	for i, o := range batch {
		results[i] = ports.Result{Ack: o.ack, Decision: o.decision}
	}
	bo := newBackoff(r.cfg.BackoffMin, r.cfg.BackoffMax)
	var status []ports.RecordStatus
	for {
		cctx, cancel := r.storeCtx(ctx)
		var err error
		status, err = r.store.Record(cctx, results)
		cancel()
		if err == nil && len(status) != len(results) {
			err = fmt.Errorf("record returned %d statuses for %d outcomes", len(status), len(results))
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			r.log.Errorw("outcomes not written before shutdown; their leases expire and the reaper takes the rows back",
				"owner", r.cfg.Owner, "count", len(batch), "error", err.Error())
			return false
		}
		d := bo.delay()
		r.log.Warnw("writing outcomes failed; retrying", "owner", r.cfg.Owner, "count", len(batch),
			"retryIn", d, "error", err.Error())
		if !sleep(ctx, d) {
			r.log.Errorw("outcomes not written before shutdown; their leases expire and the reaper takes the rows back",
				"owner", r.cfg.Owner, "count", len(batch))
			return false
		}
	}
	for i, o := range batch {
		r.held.drop(o.ack.ID)
		switch {
		case status[i] == ports.RecordGone && o.decision.Outcome() == inbox.OutcomeDone:
			// The handler succeeded and the row is gone: a handler step that deliberately
			// erases its own event is successful handling (or erasure came after the last step).
			r.metrics.Handled(o.provider, inbox.OutcomeDone.String())
			continue
		case status[i] == ports.RecordGone:
			// Erased while the outcome was on its way: nothing to write, nothing to retry.
			r.metrics.Dropped(o.provider, inbox.DropErasedDuringProcessing)
			r.metrics.Handled(o.provider, inbox.OutcomeDropped.String())
			r.log.Infow("outcome not written: delivery erased", "owner", r.cfg.Owner, "id", o.ack.ID)
			continue
		case status[i] != ports.RecordApplied:
			// A newer lease owns the row: nothing was written.
			r.metrics.Dropped(o.provider, inbox.DropLeaseLost)
			r.metrics.Handled(o.provider, inbox.OutcomeDropped.String())
			r.log.Infow("outcome not written: lease lost", "owner", r.cfg.Owner, "id", o.ack.ID,
				"epoch", int64(o.ack.Epoch))
			continue
		}
		r.metrics.Handled(o.provider, o.decision.Outcome().String())
		if o.decision.Outcome() == inbox.OutcomeRetried {
			r.metrics.Retried(o.provider, strings.ToLower(o.decision.Class().String()))
		}
	}
	signal(r.nudge)
	return true
}

// renewLoop renews every held lease in one statement each RenewInterval; a failed renewal is
// retried with backoff (well inside the lease) instead of waiting for the next period.
func (r *run) renewLoop(ctx context.Context) {
	t := time.NewTicker(r.timing.RenewInterval())
	defer t.Stop()
	bo := newBackoff(r.cfg.BackoffMin, min(r.cfg.BackoffMax, r.timing.RenewInterval()))
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			acks := r.held.renewable(time.Now())
			if len(acks) == 0 {
				break
			}
			cctx, cancel := r.storeCtx(ctx)
			renewed, err := r.store.Renew(cctx, acks, r.timing.Duration())
			cancel()
			if err == nil {
				bo.reset()
				for i, ok := range renewed {
					if !ok {
						r.log.Debugw("lease not renewed (lost, or its row busy this time)", "owner", r.cfg.Owner,
							"id", acks[i].ID, "epoch", int64(acks[i].Epoch))
					}
				}
				break
			}
			if ctx.Err() != nil {
				return
			}
			d := bo.delay()
			r.log.Warnw("renewing leases failed; retrying", "owner", r.cfg.Owner, "count", len(acks),
				"retryIn", d, "error", err.Error())
			if !sleep(ctx, d) {
				return
			}
		}
	}
}

// reapLoop hands expired leases back every ReaperInterval (each server runs one; SKIP LOCKED
// keeps them apart), in batches until none is left.
func (r *run) reapLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReaperInterval)
	defer t.Stop()
	bo := newBackoff(r.cfg.BackoffMin, r.cfg.BackoffMax)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			cctx, cancel := r.storeCtx(ctx)
			reaped, err := r.store.Reap(cctx, r.policy, r.cfg.ReapBatch)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				d := bo.delay()
				r.log.Warnw("reaping failed; backing off", "owner", r.cfg.Owner, "retryIn", d, "error", err.Error())
				if !sleep(ctx, d) {
					return
				}
				continue
			}
			bo.reset()
			r.reaped(reaped)
			if len(reaped) < r.cfg.ReapBatch {
				break
			}
		}
	}
}

func (r *run) reaped(reaped []ports.Reaped) {
	for _, rp := range reaped {
		d, label := rp.Delivery, rp.Delivery.Provider().Label()
		r.metrics.Handled(label, rp.Decision.Outcome().String())
		kv := []any{"owner", r.cfg.Owner, "id", d.ID(), "provider", label, "eventType", d.EventType(),
			"attempt", d.Attempt(), "unknownFailures", d.UnknownFailures()}
		if rp.Decision.Outcome() == inbox.OutcomeDead {
			r.log.Errorw("expired lease made the delivery dead", append(kv, "errorClass", d.ErrorClass())...)
			continue
		}
		r.metrics.Retried(label, "lease-expired")
		r.log.Warnw("expired lease taken back", kv...)
	}
	if len(reaped) > 0 {
		signal(r.nudge)
	}
}

// retentionLoop deletes ended rows every RetentionInterval on the one server that holds the
// retention singleton lease. The lease outlives two periods, so its holder keeps it while it
// lives and another server takes over only after it stopped renewing.
func (r *run) retentionLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.RetentionInterval)
	defer t.Stop()
	for {
		r.retainOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *run) retainOnce(ctx context.Context) {
	cctx, cancel := r.storeCtx(ctx)
	mine, err := r.store.AcquireSingleton(cctx, RetentionSingleton, r.cfg.Owner, 2*r.cfg.RetentionInterval)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.metrics.RetentionFailed()
			r.log.Warnw("retention could not take its lease", "owner", r.cfg.Owner, "error", err.Error())
		}
		return
	}
	if !mine {
		return
	}
	now := r.clock.Now()
	doneBefore, deadBefore := now.Add(-r.cfg.ReplayWindow), now.Add(-r.cfg.DeadRetention)
	var total int64
	for ctx.Err() == nil {
		cctx, cancel := r.storeCtx(ctx)
		n, err := r.store.DeleteEnded(cctx, doneBefore, deadBefore, r.cfg.RetentionBatch)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.metrics.RetentionFailed()
				r.log.Warnw("retention failed; the rows stay until the next run", "owner", r.cfg.Owner,
					"deleted", total, "error", err.Error())
			}
			return
		}
		total += n
		if n < int64(r.cfg.RetentionBatch) {
			break
		}
	}
	if total > 0 {
		r.log.Infow("retention deleted ended deliveries", "owner", r.cfg.Owner, "deleted", total)
	}
}

// gaugeLoop refreshes integration_inbox_rows{state} and the oldest-queued-age gauge.
func (r *run) gaugeLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.GaugeInterval)
	defer t.Stop()
	for {
		cctx, cancel := r.storeCtx(ctx)
		stats, err := r.store.Stats(cctx)
		cancel()
		if err == nil {
			for st, n := range stats.Counts {
				r.metrics.InboxRows(st.String(), n)
			}
			r.metrics.OldestQueuedAge(stats.OldestQueuedAge)
		} else if ctx.Err() == nil {
			r.log.Debugw("counting inbox rows failed", "owner", r.cfg.Owner, "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// releaseHeld hands back every lease still held when Run stops, without counting the attempt.
// It runs on a context that the stop did not cancel, bounded by ShutdownTimeout.
func (r *run) releaseHeld(ctx context.Context) error {
	acks := r.held.all()
	if len(acks) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.ShutdownTimeout)
	defer cancel()
	bo := newBackoff(r.cfg.BackoffMin, r.cfg.BackoffMax)
	for {
		cctx, ccancel := r.storeCtx(rctx)
		n, err := r.store.Release(cctx, acks)
		ccancel()
		if err == nil {
			for _, a := range acks {
				r.held.drop(a.ID)
			}
			r.log.Infow("released leases on shutdown", "owner", r.cfg.Owner, "held", len(acks), "released", n)
			return nil
		}
		d := bo.delay()
		if rctx.Err() != nil || !sleep(rctx, d) {
			r.log.Errorw("leases not released on shutdown; they expire and the reaper takes the rows back",
				"owner", r.cfg.Owner, "held", len(acks), "error", err.Error())
			return fmt.Errorf("release %d leases: %w", len(acks), err)
		}
		r.log.Warnw("releasing leases failed; retrying", "owner", r.cfg.Owner, "retryIn", d, "error", err.Error())
	}
}
