// Package periodic runs a background pass at once and then at a fixed interval: the shape of
// every one-server maintenance loop (the access recheck, the redelivery reconciler, change
// retention), whose pass decides for itself whether this server holds its singleton lease.
package periodic

import (
	"context"
	"time"
)

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
