package consumer

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// backoff is the exponential, jittered wait of a loop whose store call failed. Not safe for
// concurrent use: each loop owns its own.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max, next: min} }

// delay returns the next wait (between half and all of the current step) and doubles the step.
func (b *backoff) delay() time.Duration {
	d := b.next
	if b.next < b.max {
		b.next *= 2
		if b.next > b.max {
			b.next = b.max
		}
	}
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.next = b.min }

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// resumeBackoff is the backoff of the loops that must resume within one poll interval of the
// database accepting writes again (claims, outcome writes, reaping;
// docs/operations/database-failover.md): BackoffMax, but never longer than PollInterval, so a
// loop that backed off through a failover tries again at most a poll interval after the new
// primary took over, whatever BackoffMax says.
func (r *run) resumeBackoff() *backoff {
	return newBackoff(r.cfg.BackoffMin, max(r.cfg.BackoffMin, min(r.cfg.BackoffMax, r.cfg.PollInterval)))
}

// databaseUnreachable reports whether a store call failed because the database could not be
// reached: a transport failure (not a conflict between transactions), or the call's own
// deadline (a connection that hung with its host).
func databaseUnreachable(err error) bool {
	var transient *inbox.TransientError
	if errors.As(err, &transient) {
		return !transient.Conflict
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// unreachable records a store call that could not reach the database at now: it extends the
// current outage, or starts a new one when no call failed for longer than a store call and two
// backoffs (the loops were reaching the database in between).
func (r *run) unreachable(now time.Time) {
	r.outageMu.Lock()
	defer r.outageMu.Unlock()
	if r.outage.To.IsZero() || now.Sub(r.outage.To) > r.cfg.StoreTimeout+2*r.cfg.BackoffMax {
		r.outage.From = now
	}
	r.outage.To = now
	r.outage.Lease = r.timing.Duration()
}

// lastOutage is the last outage this server saw (zero: none).
func (r *run) lastOutage() inbox.Outage {
	r.outageMu.Lock()
	defer r.outageMu.Unlock()
	return r.outage
}

// storeCtx bounds one store call.
func (r *run) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.StoreTimeout)
}

// backOff is what every loop does after a failed store call: log it at WARN (msg, the wait and
// the error's text, never a payload), then wait the backoff's next delay. It returns false,
// logging nothing, when ctx ended before or during the wait: the loop stops.
func (r *run) backOff(ctx context.Context, bo *backoff, msg string, err error, kv ...any) bool {
	if ctx.Err() != nil {
		return false
	}
	if databaseUnreachable(err) {
		r.unreachable(r.clock.Now())
	}
	d := bo.delay()
	r.log.Warnw(msg, append(append([]any{"owner", r.cfg.Owner}, kv...), "retryIn", d, "error", err.Error())...)
	return sleep(ctx, d)
}
