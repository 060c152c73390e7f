package consumer

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// reapLoop hands expired leases back every ReaperInterval (each server runs one; SKIP LOCKED
// keeps them apart), in batches until none is left.
func (r *run) reapLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReaperInterval)
	defer t.Stop()
	bo := newBackoff(r.cfg.BackoffMin, r.cfg.BackoffMax)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			cctx, cancel := r.storeCtx(ctx)
			reaped, err := r.store.Reap(cctx, r.policy, r.cfg.ReapBatch)
			cancel()
			if err != nil {
				if !r.backOff(ctx, bo, "reaping failed; backing off", err) {
					return
				}
				continue
			}
			bo.reset()
			r.reaped(reaped)
			if len(reaped) < r.cfg.ReapBatch {
				break
			}
		}
	}
}

func (r *run) reaped(reaped []ports.Reaped) {
	for _, rp := range reaped {
		d, label := rp.Delivery, rp.Delivery.Provider().Label()
		r.metrics.Handled(label, rp.Decision.Outcome().String())
		kv := []any{"owner", r.cfg.Owner, "id", d.ID(), "provider", label, "eventType", d.EventType(),
			"attempt", d.Attempt(), "unknownFailures", d.UnknownFailures()}
		if rp.Decision.Outcome() == inbox.OutcomeDead {
			r.log.Errorw("expired lease made the delivery dead", append(kv, "errorClass", d.ErrorClass())...)
			continue
		}
		r.metrics.Retried(label, rp.Decision.Cause().String())
		r.log.Warnw("expired lease taken back", kv...)
	}
	if len(reaped) > 0 {
		signal(r.nudge)
	}
}
