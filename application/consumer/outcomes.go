package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// writeOutcomes batches outcomes into one store write: it flushes when OutcomeBatch are pending
// or OutcomeDelay after the first. A write that fails is retried with backoff until it
// succeeds, so no outcome is lost to an outage; after stop it drains what is left, until ctx
// (the shutdown timeout) ends.
func (r *run) writeOutcomes(ctx context.Context, stop <-chan struct{}) {
	batch := make([]outcome, 0, r.cfg.OutcomeBatch)
	timer := time.NewTimer(r.cfg.OutcomeDelay)
	defer timer.Stop()
	for {
		batch = batch[:0]
		select {
		case o := <-r.outcomes:
			batch = append(batch, o)
		case <-stop:
			r.drainOutcomes(ctx, batch)
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(r.cfg.OutcomeDelay)
	gather:
		for len(batch) < r.cfg.OutcomeBatch {
			select {
			case o := <-r.outcomes:
				batch = append(batch, o)
			case <-timer.C:
				break gather
			case <-stop:
				break gather
			}
		}
		if !r.flush(ctx, batch) {
			return
		}
	}
}

func (r *run) drainOutcomes(ctx context.Context, batch []outcome) {
	for {
		batch = batch[:0]
	drain:
		for len(batch) < r.cfg.OutcomeBatch {
			select {
			case o := <-r.outcomes:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		if len(batch) == 0 || !r.flush(ctx, batch) {
			return
		}
	}
}

// flush writes one batch, retrying until it succeeds or ctx ends (false).
func (r *run) flush(ctx context.Context, batch []outcome) bool {
	results := make([]ports.Result, len(batch))
	for i, o := range batch {
		results[i] = ports.Result{Ack: o.ack, Decision: o.decision}
	}
	bo := r.resumeBackoff()
	var (
		status               []ports.RecordStatus
		writeStart, writeEnd time.Time
	)
	for {
		cctx, cancel := r.storeCtx(ctx)
		var err error
		writeStart = time.Now()
		status, err = r.store.Record(cctx, results)
		writeEnd = time.Now()
		cancel()
		if err == nil && len(status) != len(results) {
			err = fmt.Errorf("record returned %d statuses for %d outcomes", len(status), len(results))
		}
		if err == nil {
			break
		}
		if !r.backOff(ctx, bo, "writing outcomes failed; retrying", err, "count", len(batch)) {
			r.log.Errorw("outcomes not written before shutdown; their leases expire and the reaper takes the rows back",
				"owner", r.cfg.Owner, "count", len(batch), "error", err.Error())
			for _, o := range batch {
				if o.span != nil {
					o.span.End()
				}
			}
			return false
		}
	}
	now := r.clock.Now()
	for i, o := range batch {
		r.held.drop(o.ack.ID)
		if o.span != nil {
			o.span.Written(writeStart, writeEnd, recordStatusName(status[i]))
		}
		switch {
		case status[i] == ports.RecordGone && o.decision.Outcome() == inbox.OutcomeDone && o.deletedOwn:
			// The handler succeeded and one of its committed steps deleted its own event on
			// purpose: successful handling.
			r.metrics.Handled(o.provider, inbox.OutcomeDone.String())
			continue
		case status[i] == ports.RecordGone:
			// Erased while the handler ran (after its last fenced write) or while the outcome
			// was on its way: nothing to write, nothing to retry.
			r.metrics.Dropped(o.provider, inbox.DropErasedDuringProcessing)
			r.metrics.Handled(o.provider, inbox.OutcomeDropped.String())
			r.log.Infow("outcome not written: delivery erased", "owner", r.cfg.Owner, "id", o.ack.ID)
			continue
		case status[i] != ports.RecordApplied:
			// A newer lease owns the row: nothing was written.
			r.metrics.Dropped(o.provider, inbox.DropLeaseLost)
			r.metrics.Handled(o.provider, inbox.OutcomeDropped.String())
			r.log.Infow("outcome not written: lease lost", "owner", r.cfg.Owner, "id", o.ack.ID,
				"epoch", int64(o.ack.Epoch))
			continue
		}
		r.metrics.Handled(o.provider, o.decision.Outcome().String())
		if o.decision.Outcome() == inbox.OutcomeRetried {
			r.metrics.Retried(o.provider, o.decision.Cause().String())
			if wait := o.decision.DueAt().Sub(now); wait < r.cfg.PollInterval {
				r.due.wakeIn(max(wait, 0), now)
			}
		}
	}
	signal(r.nudge)
	return true
}
