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
