package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.ChangeMetrics = (*Metrics)(nil)

// changeFeedGauges observe the change feed.
type changeFeedGauges struct {
	rows    prometheus.Gauge
	waiting prometheus.Gauge
}

func newChangeFeedGauges() changeFeedGauges {
	return changeFeedGauges{
		rows: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "integration_change_feed_rows",
			Help: "Changes the feed keeps, as counted at the last retention pass (on the server running it).",
		}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "integration_change_feed_waiting_clients",
			Help: "Change feed requests waiting for a change on this server (long polls and idle streams).",
		}),
	}
}

// ChangeFeedRows implements ports.ChangeMetrics.
func (m *Metrics) ChangeFeedRows(n int64) { m.changeFeed.rows.Set(float64(n)) }

// ChangeFeedWaiting implements ports.ChangeMetrics.
func (m *Metrics) ChangeFeedWaiting(n int) { m.changeFeed.waiting.Set(float64(n)) }
