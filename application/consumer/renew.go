package consumer

import (
	"context"
	"time"
)

// renewLoop renews every held lease in one statement each RenewInterval; a failed renewal is
// retried with backoff (well inside the lease) instead of waiting for the next period.
func (r *run) renewLoop(ctx context.Context) {
	t := time.NewTicker(r.timing.RenewInterval())
	defer t.Stop()
	bo := newBackoff(r.cfg.BackoffMin, min(r.cfg.BackoffMax, r.timing.RenewInterval()))
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			acks := r.held.renewable(time.Now())
			if len(acks) == 0 {
				break
			}
			cctx, cancel := r.storeCtx(ctx)
			renewed, err := r.store.Renew(cctx, acks, r.timing.Duration())
			cancel()
			if err == nil {
				bo.reset()
				for i, ok := range renewed {
					if !ok {
						r.log.Debugw("lease not renewed (lost, or its row busy this time)", "owner", r.cfg.Owner,
							"id", acks[i].ID, "epoch", int64(acks[i].Epoch))
					}
				}
				break
			}
			if !r.backOff(ctx, bo, "renewing leases failed; retrying", err, "count", len(acks)) {
				return
			}
		}
	}
}
