package tracing_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestTracing(t *testing.T) {
	support.RunSpecs(t, "Tracing: one trace per delivery, and the dashboard's metrics")
}
