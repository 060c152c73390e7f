package inbox

import (
	"strconv"
	"testing"
	"time"
)

// FuzzParseRetryAfter: whatever a provider (or a proxy in front of it) sends as Retry-After or
// a rate-limit reset, the wait is never negative, the wait a retry honours (ProviderError.Wait)
// is never above an hour, and a plain number of seconds within the hour is read exactly. Seeds: testdata/fuzz/FuzzParseRetryAfter.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retryAfter, reset string) {
		for _, d := range []time.Duration{ParseRetryAfter(retryAfter, now), UntilReset(reset, now)} {
			if d < 0 {
				t.Fatalf("negative wait %s for %q / %q", d, retryAfter, reset)
			}
		}
		if w := (&ProviderError{RetryAfter: ParseRetryAfter(retryAfter, now)}).Wait(); w < 0 || w > maxProviderWait {
			t.Fatalf("Wait %s outside [0, 1h] for %q", w, retryAfter)
		}
		if secs, err := strconv.ParseInt(retryAfter, 10, 64); err == nil && secs > 0 && secs <= 3600 {
			if got := ParseRetryAfter(retryAfter, now); got != time.Duration(secs)*time.Second {
				t.Fatalf("%q read as %s", retryAfter, got)
			}
		}
	})
}
