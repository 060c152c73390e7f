package replays

import (
	"context"
	"errors"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RunnerConfig tunes the runner; only Owner is required.
type RunnerConfig struct {
	// Owner names this server (its server id), stored as the job lease's holder.
	Owner string
	// BatchSize is how many rows one batch transaction looks at (default 200). It bounds how long
	// a batch holds row locks and how many replayed rows reach the claimers at once.
	BatchSize int
	// Lease is how long a job stays with this server after its last batch (default 1m): a
	// killed server's job is taken over by another runner once it runs out.
	Lease time.Duration
	// Interval is how often the runner looks for jobs when nobody woke it (default 5s): jobs
	// started on another server, or left by one that stopped or died.
	Interval time.Duration
}

func (c *RunnerConfig) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = 200
	}
	if c.Lease == 0 {
		c.Lease = time.Minute
	}
	if c.Interval == 0 {
		c.Interval = 5 * time.Second
	}
}

func (c RunnerConfig) validate() error {
	if c.Owner == "" || c.BatchSize < 1 || c.Lease <= 0 || c.Interval <= 0 {
		return errors.New("replay runner: Owner is required; BatchSize, Lease and Interval must be positive")
	}
	return nil
}

// Runner works RUNNING replay jobs: when woken and every Interval it claims a job no live lease
// holds and replays its rows batch after batch, each batch one short transaction, waking this
// server's claimers after each batch that replayed rows. Between two batches it hands the job
// back when another workspace's job waits and claims again (the store's claim is fair across
// workspaces), so one workspace's jobs never hold the runners while another's wait. No lock
// and no transaction lasts from one batch to the next, so live dispatch waits at most for one
// batch. A job that was cancelled or taken over stops at its next batch's fence; a stopping
// server hands its job back. It starts no goroutine: Run does all the work itself.
type Runner struct {
	cfg    RunnerConfig
	store  ports.ReplayJobStore
	queued ports.Notifier
	log    ports.Logger
	wake   periodic.Wake
}

var _ ports.Notifier = (*Runner)(nil)

// NewRunner validates cfg and builds a runner; queued wakes this server's claimers.
func NewRunner(cfg RunnerConfig, store ports.ReplayJobStore, queued ports.Notifier, log ports.Logger) (*Runner, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if store == nil || queued == nil || log == nil {
		return nil, errors.New("replay runner: store, claimers' wake and logger are required")
	}
	return &Runner{cfg: cfg, store: store, queued: queued, log: log, wake: periodic.NewWake()}, nil
}

// Notify wakes the runner (a job started on this server). It never blocks.
func (r *Runner) Notify() {
	r.wake.Notify()
}

// Run works jobs until ctx ends, then returns nil; the job in hand is handed back.
func (r *Runner) Run(ctx context.Context) error {
	return periodic.EveryOrWoken(ctx, r.cfg.Interval, r.wake, r.drain)
}

// drain works every job it can claim, one after the other.
func (r *Runner) drain(ctx context.Context) {
	for ctx.Err() == nil {
		l, ok, err := r.store.ClaimReplayJob(ctx, r.cfg.Owner, r.cfg.Lease)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warnw("claiming a replay job failed; retrying later", "causes", inbox.CauseTypes(err))
			}
			return
		}
		if !ok || !r.work(ctx, l) {
			return
		}
	}
}

// work replays the held job's batches until it ends, is lost, or ctx ends. A failure is logged
// by cause types (never by message); a transient one hands the job back for a later try, any
// other ends the job FAILED. It reports whether the runner may claim the next job now (not
// after a transient failure, which would claim the handed-back job again at once).
func (r *Runner) work(ctx context.Context, l ports.ReplayLease) bool {
	for {
		replayed, more, err := r.store.ReplayBatch(ctx, l, r.cfg.BatchSize, r.cfg.Lease)
		if replayed > 0 {
			r.queued.Notify()
		}
		switch {
		case err == nil && more:
			// Another workspace's job waits: hand this one back and claim again, which picks
			// the workspace whose turn came longest ago. A failed yield only keeps the job
			// here (the next fence decides).
			if yielded, err := r.store.YieldReplayJob(ctx, l); err == nil && yielded {
				return true
			}
			continue
		case err == nil:
			r.log.Infow("replay job done", "job", l.JobID)
			return true
		case ctx.Err() != nil:
			r.release(l)
			return false
		case errors.Is(err, inbox.ErrLeaseLost):
			r.log.Infow("replay job left: cancelled or taken over", "job", l.JobID)
			return true
		}
		var transient *inbox.TransientError
		if errors.As(err, &transient) {
			r.log.Warnw("replay batch failed; the job is handed back", "job", l.JobID, "causes", inbox.CauseTypes(err))
			r.release(l)
			return false
		}
		r.log.Errorw("replay batch failed; the job ends FAILED", "job", l.JobID, "causes", inbox.CauseTypes(err))
		if err := r.store.FailReplay(context.WithoutCancel(ctx), l); err != nil && !errors.Is(err, inbox.ErrLeaseLost) {
			r.log.Warnw("ending a replay job FAILED failed", "job", l.JobID, "causes", inbox.CauseTypes(err))
		}
		return true
	}
}

// release hands the job back so another runner takes it at once, even while ctx ends.
func (r *Runner) release(l ports.ReplayLease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.store.ReleaseReplay(ctx, l); err != nil {
		r.log.Warnw("handing a replay job back failed; its lease runs out", "job", l.JobID, "causes", inbox.CauseTypes(err))
	}
}
