package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.SyncMetrics = (*Metrics)(nil)

// syncCounters count sync jobs' pages (CONTRACT.md "Sync and teardown").
type syncCounters struct {
	items    *prometheus.CounterVec
	pages    *prometheus.CounterVec
	failures *prometheus.CounterVec
}

func newSyncCounters() syncCounters {
	return syncCounters{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sync_items_total",
			Help: "Objects written by committed sync pages, by provider.",
		}, []string{"provider"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sync_pages_total",
			Help: "Sync pages committed, by provider.",
		}, []string{"provider"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sync_failures_total",
			Help: "Sync pages that failed (retried later, or the job FAILED), by provider.",
		}, []string{"provider"}),
	}
}

func (c syncCounters) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.items, c.pages, c.failures}
}

func (c syncCounters) declare(provider string) {
	c.items.WithLabelValues(provider).Add(0)
	c.pages.WithLabelValues(provider).Add(0)
	c.failures.WithLabelValues(provider).Add(0)
}

// SyncPage implements ports.SyncMetrics.
func (m *Metrics) SyncPage(provider string, items int) {
	m.sync.pages.WithLabelValues(provider).Inc()
	m.sync.items.WithLabelValues(provider).Add(float64(items))
}

// SyncFailed implements ports.SyncMetrics.
func (m *Metrics) SyncFailed(provider string) { m.sync.failures.WithLabelValues(provider).Inc() }
