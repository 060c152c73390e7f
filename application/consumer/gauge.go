package consumer

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// gaugeLoop refreshes integration_inbox_rows{state} and the oldest-queued-age gauge on the one
// server that holds the gauge singleton lease: the figures are instance-wide, so the other
// servers leave the database alone. The lease outlives three periods, so its holder keeps it
// while it lives and another server takes over after it stopped; a server that stops gives
// it up, so the next one counts at its first attempt.
func (r *run) gaugeLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.GaugeInterval)
	defer t.Stop()
	defer periodic.GiveUp(r.store, GaugeSingleton, r.cfg.Owner, func(err error) {
		r.log.Debugw("the inbox gauges could not give their lease up", "owner", r.cfg.Owner, "error", err.Error())
	})
	for {
		cctx, cancel := r.storeCtx(ctx)
		mine, err := r.store.AcquireSingleton(cctx, GaugeSingleton, r.cfg.Owner, 3*r.cfg.GaugeInterval)
		var stats ports.InboxStats
		if err == nil && mine {
			stats, err = r.store.Stats(cctx)
		}
		cancel()
		switch {
		case err == nil && mine:
			for st, n := range stats.Counts {
				r.metrics.InboxRows(st.String(), n)
			}
			r.metrics.OldestQueuedAge(stats.OldestQueuedAge)
		case err != nil && ctx.Err() == nil:
			r.log.Debugw("counting inbox rows failed", "owner", r.cfg.Owner, "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
