package consumer

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// noTracer is the DeliveryTracer of a consumer configured without one: it records nothing.
type noTracer struct{}

func (noTracer) StartAttempt(ctx context.Context, _ ports.Claimed, _, _ time.Time) (context.Context, ports.AttemptSpan) {
	return ctx, noSpan{}
}

func (noTracer) StartWork(ctx context.Context, _ string, _ map[string]any) (context.Context, func(error)) {
	return ctx, func(error) {}
}

type noSpan struct{}

func (noSpan) Decided(string, string)               {}
func (noSpan) Written(time.Time, time.Time, string) {}
func (noSpan) End()                                 {}

// recordStatusName names an outcome write's status in the attempt's span.
func recordStatusName(s ports.RecordStatus) string {
	switch s {
	case ports.RecordApplied:
		return "applied"
	case ports.RecordGone:
		return "gone"
	default:
		return "lease-lost"
	}
}
