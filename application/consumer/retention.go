package consumer

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
)

// retentionLoop deletes ended rows every RetentionInterval on the one server that holds the
// retention singleton lease. The lease outlives two periods, so its holder keeps it while it
// lives and another server takes over only after it stopped renewing; a server that stops
// gives it up, so that the next server (a restart has a new owner id) runs retention at its
// first attempt rather than up to two periods later.
func (r *run) retentionLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.RetentionInterval)
	defer t.Stop()
	defer periodic.GiveUp(r.store, RetentionSingleton, r.cfg.Owner, func(err error) {
		r.log.Warnw("retention could not give its lease up; another server takes it when it runs out",
			"owner", r.cfg.Owner, "error", err.Error())
	})
	for {
		r.retainOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *run) retainOnce(ctx context.Context) {
	cctx, cancel := r.storeCtx(ctx)
	mine, err := r.store.AcquireSingleton(cctx, RetentionSingleton, r.cfg.Owner, 2*r.cfg.RetentionInterval)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.metrics.RetentionFailed()
			r.log.Warnw("retention could not take its lease", "owner", r.cfg.Owner, "error", err.Error())
		}
		return
	}
	if !mine {
		return
	}
	now := r.clock.Now()
	doneBefore, deadBefore := now.Add(-r.cfg.ReplayWindow), now.Add(-r.cfg.DeadRetention)
	var (
		total        int64
		batches      int
		passStart    = time.Now()
		longestBatch time.Duration
	)
	ctx, end := r.cfg.Tracer.StartWork(ctx, "inbox.retention", map[string]any{"hephaestus.server_id": r.cfg.Owner})
	defer func() {
		end(err)
	}()
	for ctx.Err() == nil {
		cctx, cancel := r.storeCtx(ctx)
		var n int64
		batchStart := time.Now()
		n, err = r.store.DeleteEnded(cctx, doneBefore, deadBefore, r.cfg.RetentionBatch)
		cancel()
		batches++
		longestBatch = max(longestBatch, time.Since(batchStart))
		if err != nil {
			if ctx.Err() == nil {
				r.metrics.RetentionFailed()
				r.log.Warnw("retention failed; the rows stay until the next run", "owner", r.cfg.Owner,
					"deleted", total, "error", err.Error())
			}
			return
		}
		total += n
		if n < int64(r.cfg.RetentionBatch) {
			break
		}
	}
	if total > 0 {
		// The pass's wall time and its longest batch (one statement, its own transaction: the
		// most retention holds at once); make soak reads them.
		r.log.Infow("retention deleted ended deliveries", "owner", r.cfg.Owner, "deleted", total,
			"batches", batches, "ms", time.Since(passStart).Milliseconds(), "longestBatchMs", longestBatch.Milliseconds())
	}
}
