// Package backfill holds the rules of sync jobs (CONTRACT.md "Sync and teardown"): a job's
// states, its kinds, and when a failed page is tried again or the job gives up. The job's
// lease follows the inbox's lease rules (domain/inbox): an epoch that every write of the
// holder names, a lease that runs out and is taken over.
package syncjob

import (
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// State is where a job stands.
type State struct{ s string }

var (
	// Queued: due at its due time (new, restarted, handed back, or waiting to retry a page).
	Queued = State{"QUEUED"}
	// Running: leased by one server, which reads and writes its pages.
	Running = State{"RUNNING"}
	// Done: every page committed.
	Done = State{"DONE"}
	// Failed: a page failed more often than the budget allows; the job's last error says why.
	Failed = State{"FAILED"}
)

// String is the state as the API shows it.
func (s State) String() string { return s.s }

// IsZero reports whether s is the zero State.
func (s State) IsZero() bool { return s.s == "" }

// ParseState reads a stored state.
func ParseState(v string) (State, error) {
	for _, s := range []State{Queued, Running, Done, Failed} {
		if s.s == v {
			return s, nil
		}
	}
	return State{}, fmt.Errorf("unknown sync job state %q", v)
}

// Kind is what a job does.
type Kind struct{ s string }

var (
	// Backfill reads a subscribed resource's history from the provider into the mirror.
	Backfill = Kind{"BACKFILL"}
	// Teardown deletes what only an uninstalled connection brought into the workspace.
	Teardown = Kind{"TEARDOWN"}
)

// String is the kind's name.
func (k Kind) String() string { return k.s }

// IsZero reports whether k is the zero Kind.
func (k Kind) IsZero() bool { return k.s == "" }

// ParseKind reads a stored kind.
func ParseKind(v string) (Kind, error) {
	for _, k := range []Kind{Backfill, Teardown} {
		if k.s == v {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("unknown sync job kind %q", v)
}

// Overall is a connection's sync state from its jobs' states: IDLE without jobs, RUNNING while
// any job is not finished, FAILED when a job failed, DONE when all are done.
func Overall(states []State) string {
	if len(states) == 0 {
		return "IDLE"
	}
	failed := false
	for _, s := range states {
		switch s {
		case Queued, Running:
			return Running.s
		case Failed:
			failed = true
		}
	}
	if failed {
		return Failed.s
	}
	return Done.s
}

// RetryPolicy decides what happens after a page failed.
type RetryPolicy struct {
	// MaxAttempts is how many failures that count against the budget a page may have before
	// the job is FAILED (default 5).
	MaxAttempts int
	// BaseDelay is the first retry's delay, doubled per counted failure (default 2 s).
	BaseDelay time.Duration
	// MaxDelay bounds the delay (default 5 min).
	MaxDelay time.Duration
}

// maxProviderWait bounds a provider's own Retry-After or rate-limit reset, as the inbox does:
// a misread header must not park a job for days.
const maxProviderWait = time.Hour

// WithDefaults fills the zero fields.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 5
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 2 * time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 5 * time.Minute
	}
	return p
}

// Decision is the outcome of a failed page.
type Decision struct {
	// Reason is the classified cause (the inbox's failure table: "provider-rate-limit",
	// "provider-unreadable", …): what last_error shows. Never an error message.
	Reason string
	// Counts: the failure uses the page's budget (attempt goes up by one).
	Counts bool
	// Final: the job is FAILED; otherwise it is due again at DueAt.
	Final bool
	DueAt time.Time
}

// Decide classifies err with the inbox's one failure table (inbox.CauseOf) and decides.
// attempt is the page's counted failures before this one. A transient cause (no answer, a 5xx,
// a rate limit, a database conflict or contention) does not count and waits at least as long
// as the provider asked; anything else counts, and the budget's last failure is final.
func (p RetryPolicy) Decide(attempt int, err error, now time.Time) Decision {
	p = p.WithDefaults()
	cause := inbox.CauseOf(err)
	if cause.IsZero() {
		cause = inbox.CauseUnknown
	}
	rule, _ := inbox.RuleOf(cause)
	counts := rule.Class != inbox.Retryable && rule.Class != inbox.Contention
	n := attempt
	if counts {
		n++
	}
	d := Decision{Reason: cause.String(), Counts: counts}
	if counts && n >= p.MaxAttempts {
		d.Final = true
		return d
	}
	delay := p.BaseDelay
	for i := 1; i < n && delay < p.MaxDelay; i++ {
		delay *= 2
	}
	delay = min(delay, p.MaxDelay)
	if wait := providerWait(err); wait > delay {
		delay = min(wait, maxProviderWait)
	}
	d.DueAt = now.Add(delay)
	return d
}

func providerWait(err error) time.Duration {
	var pe *inbox.ProviderError
	if errors.As(err, &pe) {
		return pe.RetryAfter
	}
	return 0
}
