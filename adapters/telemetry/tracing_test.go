package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Tracing configuration", func() {
	DescribeTable("asks for exported traces only when an OTLP endpoint is set and the SDK is on",
		func(env map[string]string, want bool) {
			Expect(telemetry.TracingEnabled(func(k string) string { return env[k] })).To(Equal(want))
		},
		Entry("nothing set", map[string]string{}, false),
		Entry("the common endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true),
		Entry("the traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true),
		Entry("only a sampler", map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, false),
		Entry("the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false),
		Entry("another exporter named", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false),
		Entry("the otlp exporter named", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "otlp"}, true),
	)
})

var _ = Describe("Logs and metrics inside a span", func() {
	// inSpan runs fn inside a sampled span of an SDK provider (what a traced server installs).
	inSpan := func(fn func(ctx context.Context)) (traceID, spanID string) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
		DeferCleanup(tp.Shutdown)
		ctx, span := tp.Tracer("spec").Start(context.Background(), "attempt")
		defer span.End()
		fn(ctx)
		return span.SpanContext().TraceID().String(), span.SpanContext().SpanID().String()
	}

	It("writes trace_id and span_id on JSON log lines written inside a span, and none outside", func() {
		var out bytes.Buffer
		zl, err := telemetry.NewLoggerTo(&out, "json", "info")
		Expect(err).NotTo(HaveOccurred())
		var log ports.Logger = telemetry.NewTraceLogger(zl)
		traceID, spanID := inSpan(func(ctx context.Context) {
			ports.LoggerIn(ctx, log).Infow("delivery failed; retried", "id", 1)
		})
		ports.LoggerIn(context.Background(), log).Infow("outside", "id", 2)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		Expect(lines).To(HaveLen(2))
		var inside, outside map[string]any
		Expect(json.Unmarshal([]byte(lines[0]), &inside)).To(Succeed())
		Expect(json.Unmarshal([]byte(lines[1]), &outside)).To(Succeed())
		Expect(inside).To(HaveKeyWithValue("trace_id", traceID))
		Expect(inside).To(HaveKeyWithValue("span_id", spanID))
		Expect(outside).NotTo(HaveKey("trace_id"))
		Expect(outside).NotTo(HaveKey("span_id"))
	})

	It("gives a handler duration observed inside a sampled span the trace_id as its exemplar", func() {
		m := telemetry.NewMetrics()
		traceID, _ := inSpan(func(ctx context.Context) {
			m.HandlerDuration(ctx, "github", 1500*time.Millisecond)
		})
		m.HandlerDuration(context.Background(), "gitlab", time.Second)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		m.Handler().ServeHTTP(rec, req)
		body, err := io.ReadAll(rec.Body)
		Expect(err).NotTo(HaveOccurred())
		var lines []string // the histogram's lines only, for a readable failure
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "integration_consumer_handler_seconds") {
				lines = append(lines, l)
			}
		}
		text := strings.Join(lines, "\n")
		Expect(text).To(MatchRegexp(`integration_consumer_handler_seconds_bucket\{provider="github",le="2.5"\} 1 # \{trace_id="` + traceID + `"\} 1\.5`))
		Expect(text).To(MatchRegexp(`provider="gitlab",le="2.5"\} 1\n`), "observed")
		Expect(text).NotTo(MatchRegexp(`provider="gitlab",le="[^"]+"\} \d+ # \{`), "no exemplar outside a span")
	})
})
