package consumer

import (
	"context"
	"time"
)

// gaugeLoop refreshes integration_inbox_rows{state} and the oldest-queued-age gauge.
func (r *run) gaugeLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.GaugeInterval)
	defer t.Stop()
	for {
		cctx, cancel := r.storeCtx(ctx)
		stats, err := r.store.Stats(cctx)
		cancel()
		if err == nil {
			for st, n := range stats.Counts {
				r.metrics.InboxRows(st.String(), n)
			}
			r.metrics.OldestQueuedAge(stats.OldestQueuedAge)
		} else if ctx.Err() == nil {
			r.log.Debugw("counting inbox rows failed", "owner", r.cfg.Owner, "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
