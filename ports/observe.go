package ports

import (
	"context"
	"time"
)

// Clock is the service's time. Lease expiry uses the database's clock_timestamp() instead,
// because servers' clocks differ and the lease is compared in SQL; a store whose Config names a
// Clock (specs only) passes it to its SQL as "now" instead (ARCHITECTURE.md "Time in SQL").
type Clock interface {
	Now() time.Time
}

// Logger is the structured logger the core writes to; *zap.SugaredLogger satisfies it.
// Key-value pairs alternate names and values. Never pass a secret, token or error message
// of a handler failure.
type Logger interface {
	Debugw(msg string, keysAndValues ...any)
	Infow(msg string, keysAndValues ...any)
	Warnw(msg string, keysAndValues ...any)
	Errorw(msg string, keysAndValues ...any)
}

// AdmissionMetrics counts webhook traffic (CONTRACT.md metric names).
type AdmissionMetrics interface {
	Received(provider string)         // webhook_received_total{provider}
	Rejected(provider, reason string) // webhook_rejected_total{provider,reason}
}

// ConsumerMetrics counts the claimers' work (CONTRACT.md metric names).
type ConsumerMetrics interface {
	Handled(provider, outcome string) // integration_consumer_handled_total
	Retried(provider, cause string)   // integration_consumer_retry_total
	Dropped(provider, reason string)  // integration_message_dropped_total
	RetentionFailed()                 // integration_consumer_inbox_retention_failures_total
	// HandlerDuration observes integration_consumer_handler_seconds; ctx is the handler's (its
	// trace becomes the observation's exemplar).
	HandlerDuration(ctx context.Context, provider string, d time.Duration)
	InboxRows(state string, n int64) // integration_inbox_rows{state}
	OldestQueuedAge(d time.Duration) // integration_inbox_oldest_queued_age_seconds
}

// DeliveryTracer records each attempt of a delivery in the delivery's trace (the OpenTelemetry
// adapter, adapters/telemetry). The consumer calls it for every claimed row, so an
// implementation must cost next to nothing when no trace is exported.
type DeliveryTracer interface {
	WorkTracer
	// StartAttempt starts the span of one attempt of c, a child of the trace context stored
	// with its row (c.TraceParent; a new root when there is none), and returns ctx carrying
	// it. The claim statement that leased c ran from claimStart to claimEnd: it is recorded as
	// the attempt's first child, and the time the row waited as an attribute.
	StartAttempt(ctx context.Context, c Claimed, claimStart, claimEnd time.Time) (context.Context, AttemptSpan)
}

// WorkTracer records background work outside any delivery (a sync job's page, a person
// erasure pass, a retention pass) as spans of their own (the OpenTelemetry adapter, or nothing).
type WorkTracer interface {
	// StartWork starts the root span name with attrs (attribute keys to string, int, int64 or
	// bool values; never person data) and returns ctx carrying it; end ends it, marking it
	// failed by err's cause types when err is not nil.
	StartWork(ctx context.Context, name string, attrs map[string]any) (_ context.Context, end func(err error))
}

// AttemptSpan is one attempt's span. Decided is called once; then either Written or End.
type AttemptSpan interface {
	// Decided records the attempt's outcome (inbox.Outcome names, or "released" when a stopping
	// server gave the row back) and, for a failure, its class.
	Decided(outcome, class string)
	// Written records the outcome write, which ran from start to end with status ("applied",
	// "gone", "lease-lost"), and ends the span.
	Written(start, end time.Time, status string)
	// End ends the span when no outcome is written.
	End()
}

// TracedLogger is a Logger that can name the trace of a context on its lines (the telemetry
// adapter's logger does).
type TracedLogger interface {
	Logger
	InTrace(ctx context.Context) Logger
}

// LoggerIn is log writing inside ctx's span: its lines carry the trace and span ids when log
// is a TracedLogger and ctx holds a span, and log is returned unchanged otherwise.
func LoggerIn(ctx context.Context, log Logger) Logger {
	if t, ok := log.(TracedLogger); ok {
		return t.InTrace(ctx)
	}
	return log
}
