package consumer

import (
	"context"
	"time"
)

// reserve takes the slots the next claim fills, 0 meaning wait for a worker. While every
// worker is busy (slots reserved by claims in flight count as busy), a claim waits until three
// quarters of a batch are free, so one statement refills many slots instead of one statement
// per freed slot.
func (r *run) reserve() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	free := min(r.capacity-r.busy, r.maxHeld-r.held.len()-r.reserved, r.cfg.ClaimBatch)
	if free <= 0 || (r.busy >= r.cfg.Claimers && free < r.refill) {
		return 0
	}
	r.busy += free
	r.reserved += free
	return free
}

// settle gives back the reserved slots a claim did not fill.
func (r *run) settle(reserved, claimed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserved -= reserved
	r.busy -= reserved - claimed
}

// claimLoop leases rows for the workers: min(free slots, batch) per statement, when woken,
// when outcomes freed scopes, every poll interval, and at once again after a full claim.
//
// Claim statements run on claimCtx, which the stop does not cancel: a claim that committed
// while its caller gave up would leave leases nobody renews or releases, costing their rows a
// budget unit at expiry. Rows a claim returns after ctx ended are released with the others.
//
// ClaimLoops of them run at once; Run closes r.work when all have returned.
func (r *run) claimLoop(ctx, claimCtx context.Context) {
	bo := r.resumeBackoff()
	poll := time.NewTimer(r.cfg.PollInterval)
	defer poll.Stop()
	for ctx.Err() == nil {
		n := r.reserve()
		if n == 0 {
			select {
			case <-ctx.Done():
				return
			case <-r.slotFreed:
			case <-r.nudge:
			}
			continue
		}
		if r.claimsUncertain.Load() {
			if err := r.releaseUnheld(claimCtx); err != nil {
				r.settle(n, 0)
				if !r.backOff(ctx, bo, "releasing the leases of a lost claim answer failed; backing off", err) {
					return
				}
				continue
			}
		}
		r.claimGate.RLock()
		cctx, cancel := r.storeCtx(claimCtx)
		claimStart := time.Now()
		claimed, err := r.store.Claim(cctx, r.cfg.Owner, n, r.timing.Duration())
		claimEnd := time.Now()
		cancel()
		for _, c := range claimed {
			r.held.add(c)
			r.work <- claimedRow{Claimed: c, claimStart: claimStart, claimEnd: claimEnd} // the slot was reserved: never blocks
		}
		r.claimGate.RUnlock()
		r.settle(n, len(claimed))
		if err != nil {
			// The statement may have committed and only its answer been lost (the database
			// host died after COMMIT): its rows are leased to this server, which does not
			// know them. The next claim first hands them back (releaseUnheld).
			r.claimsUncertain.Store(true)
			if !r.backOff(ctx, bo, "claiming failed; backing off", err) {
				return
			}
			continue
		}
		bo.reset()
		if len(claimed) == n {
			continue // a full claim: more rows may be waiting
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return
		case <-r.wake.C():
		case <-r.nudge:
		case <-poll.C:
		}
	}
}
