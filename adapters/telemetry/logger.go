// Package telemetry is the service's logging (zap) and metrics (Prometheus) adapter.
package telemetry

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// A *zap.SugaredLogger is the core's Logger.
var _ ports.Logger = (*zap.SugaredLogger)(nil)

// NewLogger builds the process logger on stderr: "json" is the production encoder (one JSON
// object per line), "console" the human-readable one that `make run` uses. level is a zap
// level name ("debug", "info", "warn", "error").
func NewLogger(format, level string) (*zap.Logger, error) {
	return NewLoggerTo(os.Stderr, format, level)
}

// NewLoggerTo is NewLogger writing to w (specs, tools).
func NewLoggerTo(w io.Writer, format, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.TimeKey = "time"
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("log format %q is not json or console", format)
	}
	sink := zapcore.Lock(zapcore.AddSync(w))
	// No sampling: a DEAD row, a refused delivery or the one-time admin token line must never
	// be dropped because similar lines came just before it.
	core := zapcore.NewCore(enc, sink, zap.NewAtomicLevelAt(lvl))
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel), zap.ErrorOutput(sink)), nil
}

// TraceLogger is the core's Logger (ports.Logger) that can also name a trace: InTrace gives
// the lines written inside a span the span's trace_id and span_id, so a log line leads to its
// delivery's trace.
type TraceLogger struct {
	*zap.SugaredLogger
}

var _ ports.TracedLogger = TraceLogger{}

// NewTraceLogger is the core's logger on log.
func NewTraceLogger(log *zap.Logger) TraceLogger { return TraceLogger{log.Sugar()} }

// InTrace is the logger with ctx's span's trace_id and span_id on every line, or the logger
// itself when ctx holds no valid span context (tracing off).
func (l TraceLogger) InTrace(ctx context.Context) ports.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return l.SugaredLogger
	}
	return l.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
}
