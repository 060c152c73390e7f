package inbox

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Expected contention is retried soon: a fence is held for the length of a transaction (a
// renewal, a workspace operation) or of an erasure pass (seconds). The delay doubles per
// consecutive contention retry of the row and stays well under a second, so a long-held fence
// costs a few attempts per row, not a spin.
const (
	ContentionBaseDelay = 25 * time.Millisecond
	ContentionMaxDelay  = 400 * time.Millisecond
)

// RetryPolicy turns a failure into a decision: bounded exponential delay between base and max
// for retryable and unknown failures, and an unknown-failure budget of maxAttempts.
type RetryPolicy struct {
	base        time.Duration
	max         time.Duration
	maxAttempts int
	// jitter returns a wait in [d/2, d]; nil is uniform random. Specs pin it.
	jitter func(d time.Duration) time.Duration
}

// NewRetryPolicy validates the policy (defaults: 2s, 5m, 10).
func NewRetryPolicy(base, max time.Duration, maxAttempts int) (RetryPolicy, error) {
	switch {
	case base <= 0:
		return RetryPolicy{}, errors.New("base delay must be positive")
	case max < base:
		return RetryPolicy{}, errors.New("max delay must not be below the base delay")
	case maxAttempts < 1:
		return RetryPolicy{}, errors.New("max attempts must be at least 1")
	}
	return RetryPolicy{base: base, max: max, maxAttempts: maxAttempts}, nil
}

// MaxAttempts is the unknown-failure budget: the row is DEAD once it is used.
func (p RetryPolicy) MaxAttempts() int { return p.maxAttempts }

// WithJitter returns the policy with jitter(d) choosing each contention wait in [d/2, d]
// (values outside are clamped); for specs that need exact due times.
func (p RetryPolicy) WithJitter(jitter func(d time.Duration) time.Duration) RetryPolicy {
	p.jitter = jitter
	return p
}

// ContentionDelay is the wait after the row's (contended+1)-th consecutive contention retry:
// ContentionBaseDelay·2^contended, at most ContentionMaxDelay, jittered down to half so the
// claimers of several servers that met the same fence do not return in step.
func (p RetryPolicy) ContentionDelay(contended int) time.Duration {
	d := ContentionBaseDelay
	for i := 0; i < contended && d < ContentionMaxDelay; i++ {
		d *= 2
	}
	d = min(d, ContentionMaxDelay)
	var j time.Duration
	if p.jitter != nil {
		j = min(max(p.jitter(d), d/2), d)
	} else {
		j = d/2 + rand.N(d/2+1)
	}
	return j
}

// Delay is the wait before attempt+1: base·2^(attempt-1), never above max.
func (p RetryPolicy) Delay(attempt int) time.Duration {
	d := p.base
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= p.max || d <= 0 {
			return p.max
		}
	}
	if d > p.max {
		return p.max
	}
	return d
}

// BudgetUsed reports whether unknownFailures failures used the whole budget.
func (p RetryPolicy) BudgetUsed(unknownFailures int) bool { return unknownFailures >= p.maxAttempts }

// Outcome is what the consumer records for one attempt.
type Outcome struct{ s string }

var (
	// OutcomeDone is a handled row.
	OutcomeDone = Outcome{"done"}
	// OutcomeRetried is a failed attempt whose row waits for its retry.
	OutcomeRetried = Outcome{"retried"}
	// OutcomeDead is a row that became DEAD.
	OutcomeDead = Outcome{"dead"}
	// OutcomeDropped is work dropped by the erasure or epoch fence.
	OutcomeDropped = Outcome{"dropped"}
)

// String is the outcome as metrics and attempts record it.
func (o Outcome) String() string { return o.s }

// Decision is the write that follows a failed attempt.
type Decision struct {
	outcome       Outcome
	class         FailureClass
	cause         Cause     // the table row (zero for dropped and done)
	dueAt         time.Time // retried: when the row is due again
	countsAttempt bool      // retried: false for contention (the attempt is given back)
	usesBudget    bool      // the failure counts against the unknown-failure budget
	errorClass    string    // dead: what the row records
	dropReason    string    // dropped: the integration_message_dropped_total reason
}

// Outcome is what the attempt's result does to the row.
func (d Decision) Outcome() Outcome { return d.outcome }

// Class is the failure class of a failed attempt (the zero class otherwise).
func (d Decision) Class() FailureClass { return d.class }

// Cause is the failure table's cause of a failed attempt.
func (d Decision) Cause() Cause { return d.cause }

// DueAt is when a retried row may be claimed again.
func (d Decision) DueAt() time.Time { return d.dueAt }

// CountsAttempt reports whether the attempt counts (a released lease does not).
func (d Decision) CountsAttempt() bool { return d.countsAttempt }

// UsesBudget reports whether the failure uses the unknown-failure budget.
func (d Decision) UsesBudget() bool { return d.usesBudget }

// ErrorClass is the error class a DEAD row records.
func (d Decision) ErrorClass() string { return d.errorClass }

// DropReason is why dropped work was dropped (erased-during-processing, lease-lost).
func (d Decision) DropReason() string { return d.dropReason }

// Drop reasons of integration_message_dropped_total.
const (
	DropErasedDuringProcessing = "erased-during-processing"
	DropLeaseLost              = "lease-lost"
)

// DropReasons lists every drop reason the consumer records: the label values of
// integration_message_dropped_total{reason}.
func DropReasons() []string { return []string{DropErasedDuringProcessing, DropLeaseLost} }

// Outcomes lists every outcome of integration_consumer_handled_total{outcome}.
func Outcomes() []Outcome { return []Outcome{OutcomeDone, OutcomeRetried, OutcomeDead, OutcomeDropped} }

// Decide maps a handler error of the given attempt to the next write. attempt is the row's
// attempt after the claim (1 for the first); unknownFailures is the budget used before it.
// It is DecideAfter for a row with no contention retry before this one.
func (p RetryPolicy) Decide(err error, attempt, unknownFailures int, now time.Time) Decision {
	return p.DecideAfter(err, attempt, unknownFailures, 0, now)
}

// DecideAfter is Decide for a row that was retried for contention `contended` times in a row
// just before this attempt (what the claimer remembers), which grows its contention delay.
// The row of the failure table of err's cause decides the class, the budget and the delay.
func (p RetryPolicy) DecideAfter(err error, attempt, unknownFailures, contended int, now time.Time) Decision {
	switch Classify(err) {
	case Erased:
		return Decision{outcome: OutcomeDropped, class: Erased, dropReason: DropErasedDuringProcessing}
	case LeaseLost:
		return Decision{outcome: OutcomeDropped, class: LeaseLost, dropReason: DropLeaseLost}
	}
	rule, _ := RuleOf(CauseOf(err))
	dec := Decision{class: rule.Class, cause: rule.Cause, usesBudget: rule.CountsBudget}
	if rule.Delay == DelayNone || (rule.CountsBudget && p.BudgetUsed(unknownFailures+1)) {
		dec.outcome, dec.errorClass = OutcomeDead, ErrorClass(err)
		return dec
	}
	dec.outcome, dec.countsAttempt = OutcomeRetried, true
	switch rule.Delay {
	case DelayContention:
		dec.dueAt, dec.countsAttempt = now.Add(p.ContentionDelay(contended)), false
	case DelayProviderWait:
		wait := p.Delay(attempt)
		var prov *ProviderError
		if errors.As(err, &prov) {
			wait = max(wait, prov.Wait())
		}
		dec.dueAt = now.Add(wait)
	case DelayAtOnce:
		dec.dueAt = now
	default:
		dec.dueAt = now.Add(p.Delay(attempt))
	}
	return dec
}

// Completed is the decision of a successful attempt: DONE.
func Completed() Decision { return Decision{outcome: OutcomeDone} }
