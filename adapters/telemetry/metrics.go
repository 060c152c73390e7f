package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var (
	_ ports.AdmissionMetrics = (*Metrics)(nil)
	_ ports.ConsumerMetrics  = (*Metrics)(nil)
)

// Metrics holds the service's Prometheus metrics (CONTRACT.md names) in a registry of its
// own: nothing is registered globally, so two servers in one test process do not collide.
type Metrics struct {
	registry *prometheus.Registry

	received          *prometheus.CounterVec
	rejected          *prometheus.CounterVec
	handled           *prometheus.CounterVec
	retried           *prometheus.CounterVec
	dropped           *prometheus.CounterVec
	retentionFailures prometheus.Counter
	// counters are the providers' own unlabelled counters (contract.CounterDeclarer), by name.
	counters        map[string]prometheus.Counter
	handlerSeconds  *prometheus.HistogramVec
	inboxRows       *prometheus.GaugeVec
	oldestQueuedAge prometheus.Gauge
	changeFeed      changeFeedGauges
	sync            syncCounters // sync.go
}

// handlerBuckets span a no-op handler (milliseconds) to the 30-minute handler timeout.
var handlerBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800}

// NewMetrics registers every metric, plus the Go runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_received_total",
			Help: "Webhook requests received, by provider.",
		}, []string{"provider"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_rejected_total",
			Help: "Webhook requests refused or dropped by a rule, by provider and reason.",
		}, []string{"provider", "reason"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "integration_consumer_handled_total",
			Help: "Handler attempts by provider and outcome (done, retried, dead, dropped).",
		}, []string{"provider", "outcome"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "integration_consumer_retry_total",
			Help: "Retried attempts by provider and cause.",
		}, []string{"provider", "cause"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "integration_message_dropped_total",
			Help: "Messages dropped while handling, by provider and reason (erased-during-processing, lease-lost, …).",
		}, []string{"provider", "reason"}),
		retentionFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "integration_consumer_inbox_retention_failures_total",
			Help: "Retention passes that failed and left ended rows in place.",
		}),
		handlerSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "integration_consumer_handler_seconds",
			Help:    "Handler run time by provider.",
			Buckets: handlerBuckets,
		}, []string{"provider"}),
		inboxRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "integration_inbox_rows",
			Help: "Inbox rows by state, as last counted.",
		}, []string{"state"}),
		counters: map[string]prometheus.Counter{},
		oldestQueuedAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "integration_inbox_oldest_queued_age_seconds",
			Help: "How long the oldest due QUEUED row has waited past its due time, as last measured.",
		}),
	}
	m.changeFeed = newChangeFeedGauges()
	m.sync = newSyncCounters()
	m.registry.MustRegister(m.sync.collectors()...)
	m.registry.MustRegister(m.changeFeed.rows, m.changeFeed.waiting)
	m.registry.MustRegister(
		m.received, m.rejected, m.handled, m.retried, m.dropped,
		m.retentionFailures, m.handlerSeconds, m.inboxRows, m.oldestQueuedAge,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Every state is on /metrics from the start, so an alert on DEAD rows sees 0, not absence.
	for _, s := range inbox.States() {
		m.inboxRows.WithLabelValues(s.String()).Set(0)
	}
	return m
}

// Labels are the label values the service can record, declared by the domain and the
// providers (never a list kept here), so every labelled counter is exported at 0 from start
// and rate() and alerts work before the first event.
type Labels struct {
	// Providers are the metric labels of the wired providers ("github", …).
	Providers []string
	// RejectReasons are every provider's refusal reasons, by provider label (admission's own
	// and the payload rule's included).
	RejectReasons map[string][]string
	// Counters are the providers' own unlabelled counters.
	Counters []contract.CounterSpec
}

// Declare exports every labelled counter at 0 for each provider and each outcome, retry cause
// (inbox.RetryCauses), drop reason (inbox.DropReasons) and refusal reason it can record.
// Adding 0 creates the series without changing a count, so Declare may run at any time.
func (m *Metrics) Declare(l Labels) {
	for _, p := range l.Providers {
		m.received.WithLabelValues(p).Add(0)
		m.handlerSeconds.WithLabelValues(p)
		m.sync.declare(p)
		for _, o := range inbox.Outcomes() {
			m.handled.WithLabelValues(p, o.String()).Add(0)
		}
		for _, c := range inbox.RetryCauses() {
			m.retried.WithLabelValues(p, c.String()).Add(0)
		}
		for _, r := range inbox.DropReasons() {
			m.dropped.WithLabelValues(p, r).Add(0)
		}
		for _, r := range l.RejectReasons[p] {
			m.rejected.WithLabelValues(p, r).Add(0)
		}
	}
	for _, c := range l.Counters {
		if _, ok := m.counters[c.Name]; ok {
			continue
		}
		counter := prometheus.NewCounter(prometheus.CounterOpts{Name: c.Name, Help: c.Help})
		m.registry.MustRegister(counter)
		m.counters[c.Name] = counter
	}
}

// Counter is the increment of a provider's counter declared with Declare. Errors: a name no
// module declared (the module's Counters and its use disagree).
func (m *Metrics) Counter(name string) (func(), error) {
	c, ok := m.counters[name]
	if !ok {
		return nil, fmt.Errorf("telemetry: counter %q was not declared", name)
	}
	return c.Inc, nil
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	// OpenMetrics (when the scraper asks for it) is the format that carries exemplars.
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry, EnableOpenMetrics: true})
}

// Registry is the metrics' own registry, for collectors another adapter adds (e.g. the pool).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

func (m *Metrics) Received(provider string) { m.received.WithLabelValues(provider).Inc() }

func (m *Metrics) Rejected(provider, reason string) {
	m.rejected.WithLabelValues(provider, reason).Inc()
}

func (m *Metrics) Handled(provider, outcome string) {
	m.handled.WithLabelValues(provider, outcome).Inc()
}

func (m *Metrics) Retried(provider, cause string) { m.retried.WithLabelValues(provider, cause).Inc() }

func (m *Metrics) Dropped(provider, reason string) { m.dropped.WithLabelValues(provider, reason).Inc() }

func (m *Metrics) RetentionFailed() { m.retentionFailures.Inc() }

// HandlerDuration observes one handler's duration; inside a sampled span the observation
// carries the span's trace_id as its exemplar, which links a latency bucket to a trace.
func (m *Metrics) HandlerDuration(ctx context.Context, provider string, d time.Duration) {
	obs := m.handlerSeconds.WithLabelValues(provider)
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if eo, ok := obs.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	obs.Observe(d.Seconds())
}

func (m *Metrics) InboxRows(state string, n int64) {
	m.inboxRows.WithLabelValues(state).Set(float64(n))
}

func (m *Metrics) OldestQueuedAge(d time.Duration) { m.oldestQueuedAge.Set(d.Seconds()) }
