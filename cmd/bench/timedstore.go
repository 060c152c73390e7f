package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// timedStore counts and times the consumer's claim and outcome statements in the dispatch
// child, so the bench shows where a dispatched row's time goes (statements, rows per
// statement, time per statement) next to the rate.
type timedStore struct {
	ports.InboxStore
	mu                sync.Mutex
	claims, claimed   int
	emptyClaims       int
	claimTime         time.Duration
	records, recorded int
	recordTime        time.Duration
}

func (s *timedStore) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	t := time.Now()
	c, err := s.InboxStore.Claim(ctx, owner, limit, lease)
	d := time.Since(t)
	s.mu.Lock()
	s.claims++
	s.claimed += len(c)
	if len(c) == 0 {
		s.emptyClaims++
	}
	s.claimTime += d
	s.mu.Unlock()
	return c, err
}

func (s *timedStore) Record(ctx context.Context, results []ports.Result) ([]ports.RecordStatus, error) {
	t := time.Now()
	st, err := s.InboxStore.Record(ctx, results)
	d := time.Since(t)
	s.mu.Lock()
	s.records++
	s.recorded += len(results)
	s.recordTime += d
	s.mu.Unlock()
	return st, err
}

func (s *timedStore) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	per := func(d time.Duration, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(d.Microseconds()) / float64(n)
	}
	return fmt.Sprintf("%d claims (%d empty), %.1f rows and %.0f µs each; %d outcome writes, %.1f rows and %.0f µs each",
		s.claims, s.emptyClaims, float64(s.claimed)/float64(max(s.claims, 1)), per(s.claimTime, s.claims),
		s.records, float64(s.recorded)/float64(max(s.records, 1)), per(s.recordTime, s.records))
}
