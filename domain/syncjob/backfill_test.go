package syncjob_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
)

func TestDecide(t *testing.T) {
	p := syncjob.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 3 * time.Second}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	unreadable := &inbox.ProviderError{Provider: "example", Kind: inbox.ProviderUnreadable}
	limited := &inbox.ProviderError{Provider: "example", Kind: inbox.ProviderRateLimited, RetryAfter: 10 * time.Minute}
	tooLong := &inbox.ProviderError{Provider: "example", Kind: inbox.ProviderRateLimited, RetryAfter: 72 * time.Hour}
	for _, c := range []struct {
		name    string
		attempt int
		err     error
		want    syncjob.Decision
	}{
		{"a counted failure waits the base delay", 0, unreadable, syncjob.Decision{Reason: "provider-unreadable", Counts: true, DueAt: now.Add(time.Second)}},
		{"the delay doubles", 1, unreadable, syncjob.Decision{Reason: "provider-unreadable", Counts: true, DueAt: now.Add(2 * time.Second)}},
		{"the budget's last failure is final", 2, unreadable, syncjob.Decision{Reason: "provider-unreadable", Counts: true, Final: true}},
		{"a rate limit does not count and waits as asked", 2, limited, syncjob.Decision{Reason: "provider-rate-limit", DueAt: now.Add(10 * time.Minute)}},
		{"a provider's wait is bounded", 0, tooLong, syncjob.Decision{Reason: "provider-rate-limit", DueAt: now.Add(time.Hour)}},
		{"contention does not count", 2, fmt.Errorf("page: %w", inbox.ErrBusy), syncjob.Decision{Reason: "contention", DueAt: now.Add(2 * time.Second)}},
		{"an unknown error counts", 0, errors.New("boom"), syncjob.Decision{Reason: "unknown", Counts: true, DueAt: now.Add(time.Second)}},
	} {
		if got := p.Decide(c.attempt, c.err, now); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestOverall(t *testing.T) {
	for _, c := range []struct {
		states []syncjob.State
		want   string
	}{
		{nil, "IDLE"},
		{[]syncjob.State{syncjob.Done, syncjob.Queued}, "RUNNING"},
		{[]syncjob.State{syncjob.Failed, syncjob.Running}, "RUNNING"},
		{[]syncjob.State{syncjob.Done, syncjob.Failed}, "FAILED"},
		{[]syncjob.State{syncjob.Done, syncjob.Done}, "DONE"},
	} {
		if got := syncjob.Overall(c.states); got != c.want {
			t.Errorf("Overall(%v) = %s, want %s", c.states, got, c.want)
		}
	}
}
