package consumer

import (
	"context"
	"math/rand/v2"
	"time"
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
	d := bo.delay()
	r.log.Warnw(msg, append(append([]any{"owner", r.cfg.Owner}, kv...), "retryIn", d, "error", err.Error())...)
	return sleep(ctx, d)
}
