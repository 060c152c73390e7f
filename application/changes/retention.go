package changes

import (
	"context"
	"errors"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RetentionSingleton is the singleton_lease row that picks the one server deleting expired
// changes.
const RetentionSingleton = "change-retention"

// RetentionConfig tunes retention.
type RetentionConfig struct {
	// Owner names this server in singleton_lease. Required.
	Owner string
	// Keep is how long changes are kept (HEPHAESTUS_CHANGES_RETENTION, default 7 days).
	Keep time.Duration
	// Interval between passes (default 1h).
	Interval time.Duration
	// Batch is how many changes one statement deletes (default 5000).
	Batch int
}

func (c *RetentionConfig) setDefaults() {
	if c.Keep == 0 {
		c.Keep = 7 * 24 * time.Hour
	}
	if c.Interval == 0 {
		c.Interval = time.Hour
	}
	if c.Batch == 0 {
		c.Batch = 5000
	}
}

// Retention deletes changes older than Keep, on the one server holding RetentionSingleton,
// and publishes the feed's size.
type Retention struct {
	cfg     RetentionConfig
	store   ports.ChangeRetentionStore
	lease   ports.SingletonLease
	metrics ports.ChangeMetrics
	clock   ports.Clock
	log     ports.Logger
}

// NewRetention validates cfg; every dependency is required.
func NewRetention(cfg RetentionConfig, store ports.ChangeRetentionStore, lease ports.SingletonLease,
	metrics ports.ChangeMetrics, clock ports.Clock, log ports.Logger,
) (*Retention, error) {
	cfg.setDefaults()
	switch {
	case cfg.Owner == "":
		return nil, errors.New("change retention: Owner is required")
	case cfg.Keep < 0 || cfg.Interval < 0 || cfg.Batch < 0:
		return nil, errors.New("change retention: Keep, Interval and Batch must not be negative")
	case store == nil || lease == nil || metrics == nil || clock == nil || log == nil:
		return nil, errors.New("change retention: store, lease, metrics, clock and logger are required")
	}
	return &Retention{cfg: cfg, store: store, lease: lease, metrics: metrics, clock: clock, log: log}, nil
}

// Run makes a pass at once and then every Interval until ctx ends, then gives its
// lease up (periodic.GiveUp) and returns nil.
func (r *Retention) Run(ctx context.Context) error {
	defer periodic.GiveUp(r.lease, RetentionSingleton, r.cfg.Owner, func(err error) {
		r.log.Warnw("change retention could not give its lease up; another server takes it when it runs out", "owner", r.cfg.Owner, "error", err.Error())
	})
	return periodic.Every(ctx, r.cfg.Interval, func(ctx context.Context) error {
		_, err := r.RunOnce(ctx)
		return err
	}, func(err error) {
		r.log.Warnw("change retention failed; it runs again at the next interval", "owner", r.cfg.Owner, "error", err.Error())
	})
}

// RunOnce deletes every change older than Keep if this server holds (or takes) the lease,
// and sets the size gauge. It returns how many it deleted. Errors: a database failure.
func (r *Retention) RunOnce(ctx context.Context) (int, error) {
	mine, err := r.lease.AcquireSingleton(ctx, RetentionSingleton, r.cfg.Owner, 2*r.cfg.Interval)
	if err != nil || !mine {
		return 0, err
	}
	cutoff := r.clock.Now().Add(-r.cfg.Keep)
	total := 0
	for ctx.Err() == nil {
		n, err := r.store.DeleteChangesBefore(ctx, cutoff, r.cfg.Batch)
		if err != nil {
			return total, err
		}
		total += n
		if n < r.cfg.Batch {
			break
		}
	}
	size, err := r.store.CountChanges(ctx)
	if err != nil {
		return total, err
	}
	r.metrics.ChangeFeedRows(size)
	if total > 0 {
		r.log.Infow("change retention done", "owner", r.cfg.Owner, "deleted", total, "kept", size)
	}
	return total, ctx.Err()
}
