package consumer

import "context"

// releaseUnheld hands back the leases a failed claim may have left in the database: a claim
// whose COMMIT reached the database (and, with a synchronous standby, the standby that is
// promoted next) while the answer was lost with the connection leases rows to this server that
// it never learnt of. Nobody would renew them; they would block their scopes for a whole lease
// and then cost their rows a budget unit at expiry, for a database outage that is no fault of
// theirs. Released, they are QUEUED again at once, attempt and budget unchanged.
//
// It runs before the next claim after a failed one, with no claim in flight (claimGate), so
// every row this server knows is in held and nothing else is released.
func (r *run) releaseUnheld(ctx context.Context) error {
	r.claimGate.Lock()
	defer r.claimGate.Unlock()
	if !r.claimsUncertain.Load() {
		return nil // another claim loop did it
	}
	cctx, cancel := r.storeCtx(ctx)
	n, err := r.store.ReleaseUnheld(cctx, r.cfg.Owner, r.held.ids())
	cancel()
	if err != nil {
		return err
	}
	r.claimsUncertain.Store(false)
	if n > 0 {
		r.log.Warnw("released leases of a claim whose answer was lost", "owner", r.cfg.Owner, "count", n)
		signal(r.nudge)
	}
	return nil
}
