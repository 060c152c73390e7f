// Package backfill runs sync jobs (CONTRACT.md "Sync and teardown"): durable rows that a server
// leases like inbox rows, reads page by page from the provider's source, and commits page by
// page through the provider's mirror store, each page in one transaction with the job's cursor
// and counters and the lease check. It knows no provider: each provider's contract.SyncSource
// reads and maps its pages, so a page goes through the same mirror store methods and version
// rules as the provider's webhook handlers.
package backfill

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Config tunes the runner; zero values take the defaults.
type Config struct {
	// Owner names this server in the jobs' leases (the server id). Required.
	Owner string
	// Workers is how many jobs this server works at once (default 2).
	Workers int
	// PollInterval is how often an idle worker looks for due jobs (default 5 s); a restart
	// through this server's API wakes it at once.
	PollInterval time.Duration
	// LeaseDuration is a job's lease (default 2 min); it is renewed before every page and
	// extended by every page commit.
	LeaseDuration time.Duration
	// CallTimeout bounds one page read from the provider (default 30 s, at most a quarter of
	// the lease, so a page read cannot outlive the lease it started under).
	CallTimeout time.Duration
	// Retry decides a failed page (domain/syncjob.RetryPolicy defaults).
	Retry syncjob.RetryPolicy
	// Tracer records each page as a span ("sync.page"); nil records nothing.
	Tracer ports.WorkTracer
}

func (c *Config) setDefaults() {
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.PollInterval == 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 2 * time.Minute
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = min(30*time.Second, c.LeaseDuration/4)
	}
	c.Retry = c.Retry.WithDefaults()
}

// Runner works the jobs of the sources it was given.
type Runner struct {
	cfg       Config
	store     ports.SyncJobStore
	sources   map[string]contract.SyncSource
	providers []string
	metrics   ports.SyncMetrics
	log       ports.Logger
	clock     ports.Clock
	wake      chan struct{}
}

// New validates cfg and makes the runner; every dependency is required, and at most one
// source per provider.
func New(cfg Config, store ports.SyncJobStore, sources []contract.SyncSource, metrics ports.SyncMetrics,
	log ports.Logger, clock ports.Clock,
) (*Runner, error) {
	cfg.setDefaults()
	switch {
	case cfg.Owner == "":
		return nil, errors.New("backfill: Owner is required")
	case cfg.Workers < 0 || cfg.PollInterval < 0 || cfg.LeaseDuration < 0 || cfg.CallTimeout < 0:
		return nil, errors.New("backfill: Workers, PollInterval, LeaseDuration and CallTimeout must not be negative")
	case cfg.CallTimeout >= cfg.LeaseDuration:
		return nil, errors.New("backfill: CallTimeout must be shorter than LeaseDuration")
	case store == nil || metrics == nil || log == nil || clock == nil:
		return nil, errors.New("backfill: store, metrics, logger and clock are required")
	}
	r := &Runner{cfg: cfg, store: store, sources: map[string]contract.SyncSource{}, metrics: metrics, log: log,
		clock: clock, wake: make(chan struct{}, 1)}
	for _, s := range sources {
		p := s.Provider().String()
		if _, dup := r.sources[p]; dup {
			return nil, fmt.Errorf("backfill: two sources for provider %s", p)
		}
		r.sources[p] = s
		r.providers = append(r.providers, p)
	}
	return r, nil
}

// Wake makes an idle worker of this server look for due jobs now (after a restart committed).
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run works jobs with Workers goroutines until ctx ends, then waits for them and returns nil.
// A worker that ends mid-job hands its lease back, so another server continues at once.
func (r *Runner) Run(ctx context.Context) error {
	if len(r.providers) == 0 {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx)
		}()
	}
	wg.Wait()
	return nil
}

func (r *Runner) work(ctx context.Context) {
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for ctx.Err() == nil {
		claimed, err := r.RunOne(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warnw("sync job claim failed; trying again at the next poll", "owner", r.cfg.Owner,
				"cause", inbox.ErrorClass(err))
		}
		if claimed && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-r.wake:
		}
	}
}

// Drain runs jobs one after another until none is due (specs; a worker does the same between
// polls). Errors: a claim that failed.
func (r *Runner) Drain(ctx context.Context) error {
	for {
		claimed, err := r.RunOne(ctx)
		if err != nil || !claimed {
			return err
		}
	}
}

// RunOne claims one due job and works it until it is done, failed, waiting to retry a page,
// or its lease is lost. claimed false: no job was due. Errors: the claim's.
//
// The claim statement runs on a context the stop does not cancel (bounded by claimTimeout), as
// the inbox consumer's claims do: a claim cancelled in flight can still commit on the server
// after its caller gave up, leaving a lease nobody works or hands back until it runs out. A job
// claimed when ctx has ended meanwhile is handed back at once.
func (r *Runner) RunOne(ctx context.Context) (claimed bool, err error) {
	if len(r.providers) == 0 || ctx.Err() != nil {
		return false, nil
	}
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	job, lease, found, err := r.store.ClaimSyncJob(claimCtx, r.providers, r.cfg.Owner, r.cfg.LeaseDuration)
	cancel()
	if err != nil || !found {
		return false, err
	}
	if ctx.Err() != nil {
		r.release(lease)
		return true, nil
	}
	r.runJob(ctx, job, lease)
	return true, nil
}

// claimTimeout bounds one claim statement, which the stop does not cancel.
const claimTimeout = 10 * time.Second

// runJob reads and commits pages until the job ends for this server. Outcomes are stored, not
// returned: a failed page is the job's state, never this server's error.
func (r *Runner) runJob(ctx context.Context, job ports.SyncJob, lease ports.SyncLease) {
	src := r.sources[job.Provider.String()]
	label := job.Provider.Label()
	for {
		if ctx.Err() != nil {
			r.release(lease)
			return
		}
		if err := r.store.RenewSyncLease(ctx, lease, r.cfg.LeaseDuration); err != nil {
			r.stop(ctx, job, lease, err)
			return
		}
		pctx, end := ctx, func(error) {}
		if r.cfg.Tracer != nil {
			pctx, end = r.cfg.Tracer.StartWork(ctx, "sync.page", map[string]any{
				"hephaestus.provider": label, "hephaestus.sync.job_id": job.ID, "hephaestus.sync.kind": job.Kind.String(),
				"hephaestus.sync.resource_type": job.ResourceType})
		}
		page, err := r.read(pctx, src, job)
		if err == nil {
			err = r.store.CommitSyncPage(pctx, lease, page, r.cfg.LeaseDuration)
		}
		end(err)
		if err != nil {
			if ctx.Err() != nil {
				r.release(lease)
				return
			}
			if errors.Is(err, inbox.ErrLeaseLost) {
				r.stop(ctx, job, lease, err)
				return
			}
			r.fail(ctx, job, lease, err)
			return
		}
		r.metrics.SyncPage(label, page.Items)
		if page.Done {
			r.log.Infow("sync job done", "job", job.ID, "workspace", job.WorkspaceID, "connection", job.ConnectionID,
				"provider", label, "kind", job.Kind.String(), "resource", job.ResourceType+"/"+job.ResourceID)
			return
		}
		// Between pages the job goes back to the queue when another workspace's job waits:
		// the worker claims again, and the fair claim picks the workspace with the fewest
		// running jobs. A failed yield only keeps the job here (the next fence decides).
		if yielded, err := r.store.YieldSyncJob(ctx, lease); err == nil && yielded {
			return
		}
		job.Cursor, job.Attempt = page.Next, 0
	}
}

// read asks the source for the page at the job's cursor, bounded by CallTimeout.
func (r *Runner) read(ctx context.Context, src contract.SyncSource, job ports.SyncJob) (ports.SyncPage, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	return src.NextPage(ctx, job, job.Cursor)
}

// fail records a failed page: retried later, or the job FAILED with the classified reason.
func (r *Runner) fail(ctx context.Context, job ports.SyncJob, lease ports.SyncLease, cause error) {
	d := r.cfg.Retry.Decide(job.Attempt, cause, r.clock.Now())
	r.metrics.SyncFailed(job.Provider.Label())
	kv := []any{"job", job.ID, "workspace", job.WorkspaceID, "connection", job.ConnectionID,
		"provider", job.Provider.Label(), "reason", d.Reason, "cause", inbox.ErrorClass(cause), "final", d.Final}
	if err := r.store.FailSyncPage(ctx, lease, d); err != nil {
		r.stop(ctx, job, lease, err)
		return
	}
	r.log.Warnw("sync page failed", kv...)
}

// stop ends work on a job this server can no longer write (lease lost) or whose store call
// failed; the lease runs out and the job is claimed again.
func (r *Runner) stop(ctx context.Context, job ports.SyncJob, lease ports.SyncLease, err error) {
	if errors.Is(err, inbox.ErrLeaseLost) {
		r.log.Infow("sync job lease lost; another server continues it", "job", job.ID, "epoch", lease.Epoch)
		return
	}
	if ctx.Err() == nil {
		r.log.Warnw("sync job store call failed; the job is taken up again when its lease runs out",
			"job", job.ID, "cause", inbox.ErrorClass(err))
	}
}

// release hands the lease back on shutdown (the page in flight is redone by the next claim).
func (r *Runner) release(lease ports.SyncLease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.store.ReleaseSyncLease(ctx, lease)
}
