package personerasure

import (
	"context"
	"errors"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RunnerConfig tunes the runner; the zero value is valid.
type RunnerConfig struct {
	// Interval is how often the runner looks for RUNNING requests when nobody woke it
	// (default 30s): requests of a server that died, or started on another server.
	Interval time.Duration
	// Tracer records each erasure pass as a span ("erasure.pass"); nil records nothing.
	Tracer ports.WorkTracer
}

func (c *RunnerConfig) setDefaults() {
	if c.Interval == 0 {
		c.Interval = 30 * time.Second
	}
}

func (c RunnerConfig) validate() error {
	if c.Interval < 0 {
		return errors.New("erasure runner: Interval must not be negative")
	}
	return nil
}

// Runner works RUNNING erasure requests: when woken and every Interval it holds one request
// that no runner of any server holds (and whose retry time has come), runs the passes it still
// lacks and stores DONE; FAILED after logging the sanitized cause types of an error; or, when
// the last pass left rows it could not rewrite, one more pass for later (erasure.Request.Settle). A stopping server leaves its
// request RUNNING for a later runner. It starts no goroutine: Run does all the work itself.
type Runner struct {
	cfg   RunnerConfig
	store ports.ErasureStore
	log   ports.Logger
	wake  periodic.Wake
}

var _ ports.Notifier = (*Runner)(nil)

// NewRunner validates cfg and builds a runner.
func NewRunner(cfg RunnerConfig, store ports.ErasureStore, log ports.Logger) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if store == nil || log == nil {
		return nil, errors.New("erasure runner: store and logger are required")
	}
	return &Runner{cfg: cfg, store: store, log: log, wake: periodic.NewWake()}, nil
}

// Notify wakes the runner (a request was started or resumed on this server). It never blocks:
// one pending wake is enough, since a wake makes the runner work every free request.
func (r *Runner) Notify() {
	r.wake.Notify()
}

// Run works requests until ctx ends, then returns nil. A pass in progress when ctx ends is
// rolled back and its request stays RUNNING.
func (r *Runner) Run(ctx context.Context) error {
	return periodic.EveryOrWoken(ctx, r.cfg.Interval, r.wake, r.drain)
}

// drain works every free RUNNING request, one after the other.
func (r *Runner) drain(ctx context.Context) {
	if _, err := r.store.LowerStaleFence(ctx); err != nil && ctx.Err() == nil {
		r.log.Warnw("lowering a stale erasure fence failed", "causes", inbox.CauseTypes(err))
	}
	for ctx.Err() == nil {
		held, err := r.store.Hold(ctx, r.erase)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warnw("holding an erasure request failed; retrying later", "causes", inbox.CauseTypes(err))
			}
			return
		}
		if !held {
			return
		}
	}
}

// erase runs the held request's missing passes and settles it (erasure.Request.Settle): DONE,
// or, while its last pass left inbox rows it could not rewrite, one more pass after a delay,
// then FAILED. Its error (only a cancelled ctx) leaves the request RUNNING; any other failure
// is logged by cause types, never by message (a message can quote identity values or
// payload), and ends the request FAILED.
func (r *Runner) erase(ctx context.Context, req erasure.Request, receipts []erasure.Receipt) (erasure.Request, error) {
	mirrors := r.store.Mirrors(req.Scope().Provider())
	for {
		store, pass, ok := req.Next(mirrors, receipts)
		if !ok {
			return r.settle(req, receipts), nil
		}
		pctx, end := ctx, func(error) {}
		if r.cfg.Tracer != nil {
			pctx, end = r.cfg.Tracer.StartWork(ctx, "erasure.pass", map[string]any{
				"hephaestus.erasure.id": req.ID(), "hephaestus.erasure.store": store.String(), "hephaestus.erasure.pass": pass})
		}
		rc, err := r.store.Pass(pctx, req.ID(), store, pass)
		end(err)
		if err != nil {
			if ctx.Err() != nil {
				return erasure.Request{}, ctx.Err()
			}
			r.log.Errorw("person erasure failed", "erasure", req.ID(), "store", store.String(), "pass", pass,
				"causes", inbox.CauseTypes(err))
			return req.Fail(), nil
		}
		r.log.Infow("person erasure pass committed", "erasure", req.ID(), "store", store.String(), "pass", pass,
			"deleted", rc.Deleted, "boundary", rc.Boundary, "failedRows", len(rc.FailedRows))
		receipts = append(receipts, rc)
	}
}

// settle logs how the request ends its hold.
func (r *Runner) settle(req erasure.Request, receipts []erasure.Receipt) erasure.Request {
	settled := req.Settle(receipts)
	switch settled.State() {
	case erasure.Done:
		r.log.Infow("person erasure done", "erasure", req.ID(), "passes", req.Passes())
	case erasure.Running:
		r.log.Warnw("person erasure left rows it could not rewrite; another pass follows", "erasure", req.ID(),
			"pass", req.Passes(), "retry", settled.Retries(), "after", settled.RetryDelay().String())
	default:
		r.log.Errorw("person erasure left rows it could not rewrite; retries exhausted", "erasure", req.ID(),
			"pass", req.Passes(), "retries", req.Retries())
	}
	return settled
}
