package consumer

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// reapLoop hands expired leases back every ReaperInterval (each server runs one; SKIP LOCKED
// keeps them apart), in batches until none is left. Once this server has seen the database
// unreachable, a lease that was running during that outage is taken back as a database
// transport failure, without budget: its holder's renewals failed with the outage
// (ReapAfterOutage, docs/operations/database-failover.md). A server that restarted remembers
// no outage, so an event that stops every server still costs its row the budget and ends DEAD.
func (r *run) reapLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReaperInterval)
	defer t.Stop()
	bo := r.resumeBackoff()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			cctx, cancel := r.storeCtx(ctx)
			var (
				reaped []ports.Reaped
				err    error
			)
			if outage := r.lastOutage(); !outage.From.IsZero() {
				reaped, err = r.store.ReapAfterOutage(cctx, r.policy, r.cfg.ReapBatch, outage)
			} else {
				reaped, err = r.store.Reap(cctx, r.policy, r.cfg.ReapBatch)
			}
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
		r.log.Warnw("expired lease taken back", append(kv, "cause", rp.Decision.Cause().String())...)
	}
	if len(reaped) > 0 {
		signal(r.nudge)
	}
}
