package periodic_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
)

func TestEveryRunsAtOnceReportsFailuresAndStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var failures atomic.Int32
	reported := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- periodic.Every(ctx, time.Hour, func(context.Context) error {
			return errors.New("pass failed")
		}, func(error) {
			failures.Add(1)
			reported <- struct{}{}
		})
	}()
	// The context ends only once the first pass's failure was reported: a failure of a pass
	// whose context has already ended is not reported, by design.
	select {
	case <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("the first pass runs at once, not after the interval (an hour here), and its failure is reported")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Every returned %v, want nil when its context ends", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if failures.Load() != 1 {
		t.Fatalf("failed was called %d times, want 1", failures.Load())
	}
}
