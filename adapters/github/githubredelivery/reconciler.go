// Package githubredelivery is the GitHub redelivery reconciler (CONTRACT.md "Provider access"):
// GitHub does not retry a failed webhook delivery by itself, so on the one server holding the
// "github-redelivery" singleton lease, every interval, the App's recent deliveries are listed
// (bounded pages), and each delivery whose status code is not 2xx and whose guid is stored
// nowhere in the inbox is redelivered: a durable record per guid is claimed before the
// request, so no request is made twice, by any server. A delivery whose redelivery failed too
// (no 2xx attempt listed, the guid still stored nowhere) is asked for again, MaxRequests times
// at most, each request RetryAfter·2^(requests-1) after the previous one, so a bad hour of the
// receiver does not lose it.
package githubredelivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/periodic"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Singleton is the singleton_lease row that picks the one server running the reconciler.
const Singleton = "github-redelivery"

// Provider is the inbox provider whose delivery keys are GitHub delivery guids.
const Provider = "GITHUB"

// Config tunes the reconciler.
type Config struct {
	// Owner names this server in singleton_lease (the server id). Required.
	Owner string
	// Interval between runs (HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL, default 10m).
	Interval time.Duration
	// MaxPages bounds the pages of deliveries one run reads (default 10, 100 per page).
	MaxPages int
	// CallTimeout bounds one GitHub call (default 30s).
	CallTimeout time.Duration
	// MaxRequests bounds the redelivery requests made for one guid (default 5), and
	// RetryAfter spaces them (default 30m, doubling: 30m, 1h, 2h, 4h after the previous
	// one, so the last comes some 7.5 h after the first, well within the 3 days GitHub
	// redelivers).
	MaxRequests int
	RetryAfter  time.Duration
}

func (c *Config) setDefaults() {
	if c.Interval == 0 {
		c.Interval = 10 * time.Minute
	}
	if c.MaxPages == 0 {
		c.MaxPages = 10
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.MaxRequests == 0 {
		c.MaxRequests = 5
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = 30 * time.Minute
	}
}

func (c Config) again() Again { return Again{MaxRequests: c.MaxRequests, After: c.RetryAfter} }

// Reconciler runs the passes. It starts no goroutine: Run does the work itself.
type Reconciler struct {
	cfg        Config
	deliveries HookDeliveries
	store      RedeliveryStore
	lease      ports.SingletonLease
	metrics    RedeliveryMetrics
	log        ports.Logger
}

// New validates cfg and builds the reconciler; every dependency is required.
func New(cfg Config, deliveries HookDeliveries, store RedeliveryStore, lease ports.SingletonLease,
	metrics RedeliveryMetrics, log ports.Logger,
) (*Reconciler, error) {
	cfg.setDefaults()
	switch {
	case cfg.Owner == "":
		return nil, errors.New("github redelivery: Owner is required")
	case cfg.Interval < 0 || cfg.MaxPages < 0 || cfg.CallTimeout < 0 || cfg.MaxRequests < 0 || cfg.RetryAfter < 0:
		return nil, errors.New("github redelivery: Interval, MaxPages, CallTimeout, MaxRequests and RetryAfter must not be negative")
	case deliveries == nil || store == nil || lease == nil || metrics == nil || log == nil:
		return nil, errors.New("github redelivery: deliveries, store, lease, metrics and logger are required")
	}
	return &Reconciler{cfg: cfg, deliveries: deliveries, store: store, lease: lease, metrics: metrics, log: log}, nil
}

// Run makes a run at once and then every Interval until ctx ends, then gives its
// lease up (periodic.GiveUp) and returns nil.
func (r *Reconciler) Run(ctx context.Context) error {
	defer periodic.GiveUp(r.lease, Singleton, r.cfg.Owner, func(err error) {
		r.log.Warnw("github redelivery could not give its lease up; another server takes it when it runs out", "owner", r.cfg.Owner, "error", err.Error())
	})
	return periodic.Every(ctx, r.cfg.Interval, func(ctx context.Context) error {
		_, err := r.RunOnce(ctx)
		return err
	}, func(err error) {
		r.log.Warnw("github redelivery run failed; it runs again at the next interval", "owner", r.cfg.Owner, "error", err.Error())
	})
}

// Stats is what one run did.
type Stats struct {
	Ran       bool // this server held the lease
	Pages     int  // pages of deliveries read
	Failed    int  // distinct failed guids seen
	Requested int  // redeliveries requested
}

// RunOnce makes one run if this server holds (or takes) the lease, which outlives two
// intervals. Errors: a database or GitHub failure (the run stops; what it requested stays
// recorded).
func (r *Reconciler) RunOnce(ctx context.Context) (Stats, error) {
	var st Stats
	mine, err := r.lease.AcquireSingleton(ctx, Singleton, r.cfg.Owner, 2*r.cfg.Interval)
	if err != nil || !mine {
		return st, err
	}
	// The run is a root span of its own; GitHub's list and redelivery calls are its children.
	ctx, end := telemetry.DeliveryTracer{Server: r.cfg.Owner}.StartWork(ctx, "github.redelivery_run",
		map[string]any{"hephaestus.provider": "github"})
	defer func() { end(err) }()
	st, err = r.run(ctx)
	return st, err
}

// run is RunOnce's work once the lease is held.
func (r *Reconciler) run(ctx context.Context) (Stats, error) {
	var st Stats
	st.Ran = true
	seen := map[string]bool{}
	cursor := ""
	for st.Pages < r.cfg.MaxPages && ctx.Err() == nil {
		page, next, err := r.list(ctx, cursor)
		if err != nil {
			return st, fmt.Errorf("list hook deliveries: %w", err)
		}
		st.Pages++
		// A guid appears once per attempt; one is enough, and one 2xx attempt means delivered.
		failed := map[string]HookDelivery{}
		for _, d := range page {
			if d.GUID == "" || seen[d.GUID] {
				continue
			}
			if d.StatusCode >= 200 && d.StatusCode < 300 {
				seen[d.GUID] = true
				delete(failed, d.GUID)
				continue
			}
			if _, ok := failed[d.GUID]; !ok {
				failed[d.GUID] = d
			}
		}
		guids := make([]string, 0, len(failed))
		for _, d := range page { // page order, newest first, for a stable log
			if f, ok := failed[d.GUID]; ok && f.ID == d.ID {
				guids = append(guids, d.GUID)
			}
		}
		for _, g := range guids {
			seen[g] = true
		}
		st.Failed += len(guids)
		unknown, err := r.store.UnknownGUIDs(ctx, Provider, guids, r.cfg.again())
		if err != nil {
			return st, fmt.Errorf("read stored guids: %w", err)
		}
		for _, g := range unknown {
			requested, err := r.redeliver(ctx, failed[g])
			if err != nil {
				return st, err
			}
			if requested {
				st.Requested++
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return st, ctx.Err()
}

func (r *Reconciler) list(ctx context.Context, cursor string) ([]HookDelivery, string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	return r.deliveries.ListHookDeliveries(ctx, cursor)
}

// redeliver claims d's guid's next request and asks GitHub for a redelivery. A failed request
// releases the claim, so the next run asks again; a process that stops between the claim and
// the request loses that request (at most once per claim wins over at least once).
func (r *Reconciler) redeliver(ctx context.Context, d HookDelivery) (bool, error) {
	claimed, err := r.store.ClaimRedelivery(ctx, d.GUID, d.ID, r.cfg.again())
	if err != nil || !claimed {
		return false, err
	}
	callCtx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	err = r.deliveries.RequestRedelivery(callCtx, d.ID)
	cancel()
	if err != nil {
		if rerr := r.store.ReleaseRedelivery(context.WithoutCancel(ctx), d.GUID); rerr != nil {
			return false, errors.Join(fmt.Errorf("request redelivery of %s: %w", d.GUID, err), rerr)
		}
		return false, fmt.Errorf("request redelivery of %s: %w", d.GUID, err)
	}
	r.metrics.RedeliveryRequested()
	r.log.Infow("github redelivery requested", "guid", d.GUID, "deliveryId", d.ID, "statusCode", d.StatusCode)
	return true, nil
}
