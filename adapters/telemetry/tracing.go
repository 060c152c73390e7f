package telemetry

// Why this file: one delivery is one trace. The tracer provider is the process's
// global one (otel.SetTracerProvider), so every adapter that starts a span (the webhook route,
// the admission store, the step runner, the provider API clients' transports) uses the provider
// the bootstrap installed, and without an exporter the global provider is the no-op one: a span
// start is then a context lookup and nothing else.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// TracerName is the instrumentation scope of every span the service starts.
const TracerName = "github.com/hephaestus-dev/hephaestus"

// ServiceName is the resource's service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise.
const ServiceName = "hephaestus"

// The service's own span attributes (beside the semantic conventions'). None holds a payload
// value, a secret or a person: the scope is hashed because a scope key can name a person (a
// Slack DM channel, a user's repository).
const (
	AttrProvider   = attribute.Key("hephaestus.provider")
	AttrEventType  = attribute.Key("hephaestus.event_type")
	AttrDeliveryID = attribute.Key("hephaestus.delivery_id")
	// AttrDeliveryKey is the provider's delivery id (the row's delivery key), on the request
	// span and on every attempt span: it is what the provider's delivery log shows. Not a
	// secret nor a person: a random id the provider chose.
	AttrDeliveryKey = attribute.Key("hephaestus.delivery_key")
	AttrAttempt     = attribute.Key("hephaestus.attempt")
	AttrScope       = attribute.Key("hephaestus.scope")
	AttrWaited      = attribute.Key("hephaestus.inbox.waited_seconds")
	AttrOutcome     = attribute.Key("hephaestus.outcome")
	AttrClass       = attribute.Key("hephaestus.failure_class")
	AttrStep        = attribute.Key("hephaestus.step")
	AttrStepRan     = attribute.Key("hephaestus.step.ran")
	AttrWrite       = attribute.Key("hephaestus.outcome_write")
	AttrServer      = attribute.Key("hephaestus.server_id")
)

// Tracer is the service's tracer, from the global provider. It is asked for on every span
// start (a tracer taken once would stay bound to the provider installed first), but a
// provider's tracer is kept while that provider stays installed: asking a provider for a tracer
// takes its lock, which every request would otherwise contend for.
func Tracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	if c := cachedTracer.Load(); c != nil && c.provider == tp {
		return c.tracer
	}
	t := tp.Tracer(TracerName)
	if reflect.TypeOf(tp).Comparable() { // the comparison above must never panic
		cachedTracer.Store(&providerTracer{provider: tp, tracer: t})
	}
	return t
}

type providerTracer struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

var cachedTracer atomic.Pointer[providerTracer]

// TracingEnabled reports whether the standard OTEL_* variables ask for exported traces: an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the
// SDK is not disabled (OTEL_SDK_DISABLED) and OTEL_TRACES_EXPORTER, when set, is "otlp".
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e != "" && e != "otlp" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracing is the process's tracer provider: an SDK provider exporting in batches, or none.
type Tracing struct {
	provider *sdktrace.TracerProvider // nil: nothing is traced
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.provider != nil }

// StartTracing installs the global tracer provider. With exporter (specs pass the SDK's
// in-memory one) or with enabled (TracingEnabled: the OTLP exporter, configured by the
// OTEL_EXPORTER_OTLP_* variables the exporter reads itself; OTEL_EXPORTER_OTLP_PROTOCOL or
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "grpc" picks gRPC, anything else HTTP/protobuf) it is an
// SDK provider that samples as OTEL_TRACES_SAMPLER says and exports in batches
// (OTEL_BSP_*); otherwise it is the no-op provider. protocol is the OTLP protocol variable's
// value.
func StartTracing(ctx context.Context, enabled bool, protocol string, exporter sdktrace.SpanExporter) (*Tracing, error) {
	if exporter == nil && !enabled {
		otel.SetTracerProvider(noop.NewTracerProvider())
		return &Tracing{}, nil
	}
	if exporter == nil {
		var err error
		if exporter, err = otlpExporter(ctx, protocol); err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return &Tracing{provider: tp}, nil
}

func otlpExporter(ctx context.Context, protocol string) (sdktrace.SpanExporter, error) {
	if strings.TrimSpace(protocol) == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

// Shutdown exports the spans still buffered and stops the provider (the last thing a stopping
// server does), within ctx. The global provider becomes the no-op one again.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	otel.SetTracerProvider(noop.NewTracerProvider())
	return t.provider.Shutdown(ctx)
}

// traceContext is the W3C Trace Context format, used only to store a span's context with its
// inbox row and read it back: no incoming header is ever extracted with it.
var traceContext = propagation.TraceContext{}

// TraceParent is the W3C traceparent of the span in ctx, "" when ctx holds no valid span
// context (tracing off).
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// withTraceParent returns ctx with the remote span context tp names (a stored traceparent),
// or ctx unchanged when tp is empty or malformed.
func withTraceParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// HashScope is the hephaestus.scope attribute: the first 16 hex digits of the scope key's
// SHA-256, enough to tell a scope's attempts from others' and not the key itself.
func HashScope(scope string) string {
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:8])
}

// DeliveryTracer is the consumer's ports.DeliveryTracer on the global tracer provider.
type DeliveryTracer struct {
	// Server is the claiming server's id (HEPHAESTUS_SERVER_ID), the attempt's
	// hephaestus.server_id: which server ran which attempt.
	Server string
}

var _ ports.DeliveryTracer = DeliveryTracer{}

// StartAttempt starts "inbox.attempt" as a child of the row's stored trace context (a root
// when the row has none) and records the claim statement that leased it as a child span. The
// time the row waited (from its due time to the claim) is an attribute, not a span.
func (t DeliveryTracer) StartAttempt(ctx context.Context, c ports.Claimed, claimStart, claimEnd time.Time) (context.Context, ports.AttemptSpan) {
	tracer := Tracer()
	parent := withTraceParent(ctx, c.TraceParent)
	d := c.Delivery
	waited := claimStart.Sub(d.DueAt())
	if waited < 0 {
		waited = 0
	}
	sctx, span := tracer.Start(parent, "inbox.attempt", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(claimStart), trace.WithAttributes(
			AttrProvider.String(d.Provider().Label()),
			AttrEventType.String(d.EventType()),
			AttrDeliveryID.Int64(d.ID()),
			AttrDeliveryKey.String(d.DeliveryKey()),
			AttrAttempt.Int(d.Attempt()),
			AttrScope.String(HashScope(d.Scope().String())),
			AttrWaited.Float64(waited.Seconds()),
			AttrServer.String(t.Server),
		))
	if !span.IsRecording() {
		return ctx, noAttempt{} // not traced here: the handler's context stays as it was
	}
	_, claim := tracer.Start(sctx, "inbox.claim", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(claimStart), trace.WithAttributes(dbAttributes("UPDATE", "provider_event")...))
	claim.End(trace.WithTimestamp(claimEnd))
	return sctx, &attemptSpan{ctx: sctx, span: span}
}

// StartWork starts a root span of background work (ports.WorkTracer): a sync page, an erasure
// pass, a retention pass. Its provider calls and database spans are its children.
func (t DeliveryTracer) StartWork(ctx context.Context, name string, attrs map[string]any) (context.Context, func(error)) {
	ctx, span := Tracer().Start(ctx, name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal))
	if !span.IsRecording() {
		return ctx, func(error) {}
	}
	span.SetAttributes(AttrServer.String(t.Server))
	for k, v := range attrs {
		switch v := v.(type) {
		case string:
			span.SetAttributes(attribute.String(k, v))
		case int:
			span.SetAttributes(attribute.Int(k, v))
		case int64:
			span.SetAttributes(attribute.Int64(k, v))
		case bool:
			span.SetAttributes(attribute.Bool(k, v))
		}
	}
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, strings.Join(inbox.CauseTypes(err), " <- ")) // never the message
		}
		span.End()
	}
}

type attemptSpan struct {
	ctx  context.Context
	span trace.Span
}

func (a *attemptSpan) Decided(outcome, class string) {
	a.span.SetAttributes(AttrOutcome.String(outcome))
	if class != "" {
		a.span.SetAttributes(AttrClass.String(class))
		a.span.SetStatus(codes.Error, class) // the class, never the error's message
	}
}

func (a *attemptSpan) Written(start, end time.Time, status string) {
	_, w := Tracer().Start(a.ctx, "inbox.outcome_write", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(append(dbAttributes("UPDATE", "provider_event"),
			AttrWrite.String(status))...))
	w.End(trace.WithTimestamp(end))
	a.span.End()
}

func (a *attemptSpan) End() { a.span.End() }

type noAttempt struct{}

func (noAttempt) Decided(string, string)               {}
func (noAttempt) Written(time.Time, time.Time, string) {}
func (noAttempt) End()                                 {}

// dbAttributes are the database semantic conventions of a statement on PostgreSQL.
func dbAttributes(operation, collection string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.DBSystemNamePostgreSQL, semconv.DBOperationName(operation),
		semconv.DBCollectionName(collection)}
}

// DBAttributes is dbAttributes for the adapters that start database spans of their own.
func DBAttributes(operation, collection string) []attribute.KeyValue {
	return dbAttributes(operation, collection)
}
