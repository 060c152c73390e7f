// Package periodic runs a background pass at once and then at a fixed interval: the shape of
// every one-server maintenance loop (the access recheck, the redelivery reconciler, change
// retention), whose pass decides for itself whether this server holds its singleton lease.
package periodic

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// giveUpTimeout bounds the release of a lease at stop: the loop's own context has ended.
const giveUpTimeout = 5 * time.Second

// Every runs pass at once and then every interval until ctx ends, then returns nil. A failed
// pass is handed to failed (unless ctx ended) and the loop goes on: the next pass is the retry.
func Every(ctx context.Context, interval time.Duration, pass func(context.Context) error, failed func(error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			failed(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Wake is a loop's pending wake-up: Notify never blocks, and one pending wake is enough,
// since a woken pass works everything there is.
type Wake chan struct{}

// NewWake makes a Wake with room for one pending wake-up.
func NewWake() Wake { return make(Wake, 1) }

// Notify wakes the loop that waits on w, or leaves one wake pending. It never blocks.
func (w Wake) Notify() {
	select {
	case w <- struct{}{}:
	default:
	}
}

// EveryOrWoken runs pass at once and then after every interval or wake-up, until ctx ends;
// then it returns nil. pass handles its own failures.
func EveryOrWoken(ctx context.Context, interval time.Duration, wake Wake, pass func(context.Context)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-t.C:
		}
	}
}

// GiveUp releases the singleton lease name of owner; a loop defers it so that the server that
// runs next (a restarted one has a new owner id) takes the lease at its first pass rather than
// when it runs out, two or three intervals later. It is a no-op when owner does not hold it. A
// failure goes to failed: the lease then runs out as it would have.
func GiveUp(lease ports.SingletonLease, name, owner string, failed func(error)) {
	ctx, cancel := context.WithTimeout(context.Background(), giveUpTimeout)
	defer cancel()
	if err := lease.ReleaseSingleton(ctx, name, owner); err != nil {
		failed(err)
	}
}
