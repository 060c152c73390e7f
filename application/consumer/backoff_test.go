package consumer

import (
	"testing"
	"time"
)

// A loop that backed off through a failover tries again at most a poll interval after the new
// primary accepts writes, whatever BackoffMax says.
func TestResumeBackoffNeverWaitsLongerThanAPollInterval(t *testing.T) {
	for _, c := range []struct {
		name                 string
		min, max, poll, want time.Duration
	}{
		{"defaults", 100 * time.Millisecond, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"a backoff longer than the poll", 100 * time.Millisecond, time.Minute, 2 * time.Second, 2 * time.Second},
		{"a backoff shorter than the poll", 100 * time.Millisecond, time.Second, 5 * time.Second, time.Second},
		{"a poll shorter than the first step", time.Second, time.Minute, 100 * time.Millisecond, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &run{Consumer: &Consumer{cfg: Config{BackoffMin: c.min, BackoffMax: c.max, PollInterval: c.poll}}}
			bo := r.resumeBackoff()
			var longest time.Duration
			for range 40 {
				longest = max(longest, bo.delay())
			}
			if longest > c.want {
				t.Fatalf("a delay of %s, want at most %s", longest, c.want)
			}
			if longest < c.want/2 {
				t.Fatalf("the delays grew to %s only, want them to reach half of %s", longest, c.want)
			}
		})
	}
}
