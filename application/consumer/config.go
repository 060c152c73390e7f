package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Config tunes one server's consumer. Zero values take the defaults below (setDefaults);
// validate refuses what is left inconsistent. Only Owner is required.
type Config struct {
	// Owner names this server (its server id): stored in leased_by, used for the retention
	// singleton and in logs.
	Owner string

	// Claimers is how many handlers run at once on this server (default 8).
	Claimers int
	// ClaimBatch is the most rows one claim statement leases (default 32). A claim asks for
	// min(free slots, ClaimBatch), so it never leases more than the server can start soon.
	ClaimBatch int
	// ClaimAhead is how many claimed rows may wait for a worker beyond the running ones
	// (default 4 × Claimers). It lets one claim statement fill the workers again while they are
	// busy, so a commit per handful of rows does not bound throughput; the rows it holds are
	// leased, renewed and released like running ones. Rows inside a claim statement in flight
	// count against it too, so with fast handlers Claimers + ClaimAhead over a claim's latency
	// bounds dispatch (docs/operations/performance.md).
	ClaimAhead int
	// ClaimLoops is how many claim statements may run at once (default 2). With one, a claim
	// waits for the previous one's commit: the claim statements' round trips then bound dispatch,
	// not the database. Each loop claims for the same free slots, so the bound on held rows
	// (Claimers + ClaimAhead) is unchanged.
	ClaimLoops int

	LeaseDuration  time.Duration // lease length (default 2m)
	RenewInterval  time.Duration // renewal period of held leases (default 30s)
	HandlerTimeout time.Duration // longest a handler runs before its context is cancelled (default 30m)
	ReaperInterval time.Duration // reaper period (default 30s)
	PollInterval   time.Duration // claim poll when not woken (default 5s)

	ReplayWindow      time.Duration // DONE rows kept (default 3d)
	DeadRetention     time.Duration // DEAD rows kept (default 30d)
	RetentionInterval time.Duration // retention period; one server runs it (default 1h)

	RetryBaseDelay    time.Duration // first retry delay (default 2s)
	RetryMaxDelay     time.Duration // largest retry delay (default 5m)
	PoisonMaxAttempts int           // unknown-failure budget (default 10)

	// ShutdownGrace is how long a stopping server waits for running handlers before it
	// cancels their contexts (default 10s).
	ShutdownGrace time.Duration
	// ShutdownTimeout bounds the last outcome writes and the release of the leases still held
	// when Run stops (default 10s).
	ShutdownTimeout time.Duration
	// StopBudget, when positive, bounds Run's whole stop, from the cancellation of its context
	// to its return (HEPHAESTUS_SHUTDOWN_TIMEOUT less what the process needs after it): the
	// waits above end early enough to leave a fifth of it for releasing the leases still held,
	// so a stop never ends in a kill that leaves leases to expire. Zero: each wait takes its
	// own duration.
	StopBudget time.Duration

	// OutcomeBatch flushes outcome writes when this many are pending (default 128);
	// OutcomeDelay is how long the first pending outcome waits for company (default 2ms).
	OutcomeBatch int
	OutcomeDelay time.Duration

	ReapBatch      int           // expired leases ended per reaper statement (default 100)
	RetentionBatch int           // ended rows deleted per retention statement (default 1000)
	GaugeInterval  time.Duration // refresh of integration_inbox_rows (default 30s)

	// BackoffMin and BackoffMax bound the exponential backoff of every loop whose store call
	// failed (database outage): claims, outcome writes, renewals, reaping (default 100ms, 5s).
	BackoffMin time.Duration
	BackoffMax time.Duration
	// StoreTimeout bounds each store call, so a hung connection cannot stop a loop (default 30s).
	StoreTimeout time.Duration

	// DispatchContext builds the context a handler runs with from the worker's context (which
	// carries the handler timeout) and the claimed row. The step runner uses it to bind the
	// dispatch identity (event id and lease epoch). Nil means the context is passed unchanged.
	DispatchContext func(ctx context.Context, c ports.Claimed) context.Context

	// Tracer records each attempt in its delivery's trace; nil traces nothing.
	Tracer ports.DeliveryTracer
}

// RetentionSingleton is the singleton_lease row that picks the one server running retention.
const RetentionSingleton = "inbox-retention"

// GaugeSingleton is the singleton_lease row that picks the one server refreshing the
// instance-wide inbox gauges: every server reads the same database, so one count is enough.
const GaugeSingleton = "inbox-gauges"

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	defInt(&c.Claimers, 8)
	defInt(&c.ClaimBatch, 32)
	defInt(&c.ClaimAhead, 4*c.Claimers)
	defInt(&c.ClaimLoops, 2)
	def(&c.LeaseDuration, 2*time.Minute)
	def(&c.RenewInterval, 30*time.Second)
	def(&c.HandlerTimeout, 30*time.Minute)
	def(&c.ReaperInterval, 30*time.Second)
	def(&c.PollInterval, 5*time.Second)
	def(&c.ReplayWindow, 72*time.Hour)
	def(&c.DeadRetention, 30*24*time.Hour)
	def(&c.RetentionInterval, time.Hour)
	def(&c.RetryBaseDelay, 2*time.Second)
	def(&c.RetryMaxDelay, 5*time.Minute)
	defInt(&c.PoisonMaxAttempts, 10)
	def(&c.ShutdownGrace, 10*time.Second)
	def(&c.ShutdownTimeout, 10*time.Second)
	defInt(&c.OutcomeBatch, 128)
	def(&c.OutcomeDelay, 2*time.Millisecond)
	defInt(&c.ReapBatch, 100)
	defInt(&c.RetentionBatch, 1000)
	def(&c.GaugeInterval, 30*time.Second)
	def(&c.BackoffMin, 100*time.Millisecond)
	def(&c.BackoffMax, 5*time.Second)
	def(&c.StoreTimeout, 30*time.Second)
}

// validate checks the defaulted config and builds the domain's timing and retry policy, so the
// domain's rules (renewal inside the lease, a positive budget) are checked where they live.
func (c *Config) validate() (inbox.LeaseTiming, inbox.RetryPolicy, error) {
	var errs []error
	if c.Owner == "" {
		//lint:ignore ST1005 the message starts with the Config field's name
		errs = append(errs, errors.New("Owner (the server id) is required"))
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Claimers", c.Claimers}, {"ClaimBatch", c.ClaimBatch}, {"ClaimLoops", c.ClaimLoops}, {"OutcomeBatch", c.OutcomeBatch},
		{"ReapBatch", c.ReapBatch}, {"RetentionBatch", c.RetentionBatch},
	} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1", f.name))
		}
	}
	if c.ClaimAhead < 0 {
		errs = append(errs, errors.New("ClaimAhead must not be negative"))
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"ReaperInterval", c.ReaperInterval}, {"PollInterval", c.PollInterval},
		{"ReplayWindow", c.ReplayWindow}, {"DeadRetention", c.DeadRetention},
		{"RetentionInterval", c.RetentionInterval}, {"ShutdownGrace", c.ShutdownGrace},
		{"ShutdownTimeout", c.ShutdownTimeout}, {"OutcomeDelay", c.OutcomeDelay},
		{"GaugeInterval", c.GaugeInterval}, {"BackoffMin", c.BackoffMin}, {"BackoffMax", c.BackoffMax},
		{"StoreTimeout", c.StoreTimeout},
	} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", f.name))
		}
	}
	if c.StopBudget < 0 {
		errs = append(errs, errors.New("StopBudget must not be negative"))
	}
	if c.BackoffMax < c.BackoffMin {
		errs = append(errs, errors.New("BackoffMax must not be below BackoffMin"))
	}
	timing, err := inbox.NewLeaseTiming(c.LeaseDuration, c.RenewInterval, c.HandlerTimeout)
	if err != nil {
		errs = append(errs, err)
	}
	policy, err := inbox.NewRetryPolicy(c.RetryBaseDelay, c.RetryMaxDelay, c.PoisonMaxAttempts)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return inbox.LeaseTiming{}, inbox.RetryPolicy{}, fmt.Errorf("consumer config: %w", errors.Join(errs...))
	}
	return timing, policy, nil
}
