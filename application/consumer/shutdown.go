package consumer

import (
	"context"
	"fmt"
	"time"
)

// waitFor waits until done is closed or d passed; false when d passed first.
func waitFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// releaseHeld hands back every lease still held when Run stops, without counting the attempt.
// It runs on a context that the stop did not cancel, bounded by ShutdownTimeout.
func (r *run) releaseHeld(ctx context.Context) error {
	acks := r.held.all()
	if len(acks) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.ShutdownTimeout)
	defer cancel()
	bo := newBackoff(r.cfg.BackoffMin, r.cfg.BackoffMax)
	for {
		cctx, ccancel := r.storeCtx(rctx)
		n, err := r.store.Release(cctx, acks)
		ccancel()
		if err == nil {
			for _, a := range acks {
				r.held.drop(a.ID)
			}
			r.log.Infow("released leases on shutdown", "owner", r.cfg.Owner, "held", len(acks), "released", n)
			return nil
		}
		if !r.backOff(rctx, bo, "releasing leases failed; retrying", err) {
			r.log.Errorw("leases not released on shutdown; they expire and the reaper takes the rows back",
				"owner", r.cfg.Owner, "held", len(acks), "error", err.Error())
			return fmt.Errorf("release %d leases: %w", len(acks), err)
		}
	}
}
