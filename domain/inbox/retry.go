package inbox

import (
	"errors"
	"time"
)

// RetryPolicy turns a failure into a decision: bounded exponential delay between base and max
// for retryable and unknown failures, and an unknown-failure budget of maxAttempts.
type RetryPolicy struct {
	base        time.Duration
	max         time.Duration
	maxAttempts int
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

func (p RetryPolicy) MaxAttempts() int { return p.maxAttempts }

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
	OutcomeDone    = Outcome{"done"}
	OutcomeRetried = Outcome{"retried"}
	OutcomeDead    = Outcome{"dead"}
	OutcomeDropped = Outcome{"dropped"}
)

func (o Outcome) String() string { return o.s }

// Decision is the write that follows a failed attempt.
type Decision struct {
	outcome       Outcome
	class         FailureClass
	dueAt         time.Time // retried: when the row is due again
	countsAttempt bool      // retried: false for contention (the attempt is given back)
	usesBudget    bool      // the failure counts against the unknown-failure budget
	errorClass    string    // dead: what the row records
	dropReason    string    // dropped: the integration_message_dropped_total reason
}

func (d Decision) Outcome() Outcome    { return d.outcome }
func (d Decision) Class() FailureClass { return d.class }
func (d Decision) DueAt() time.Time    { return d.dueAt }
func (d Decision) CountsAttempt() bool { return d.countsAttempt }
func (d Decision) UsesBudget() bool    { return d.usesBudget }
func (d Decision) ErrorClass() string  { return d.errorClass }
func (d Decision) DropReason() string  { return d.dropReason }

// Drop reasons of integration_message_dropped_total.
const (
	DropErasedDuringProcessing = "erased-during-processing"
	DropLeaseLost              = "lease-lost"
)

// Decide maps a handler error of the given attempt to the next write. attempt is the row's
// attempt after the claim (1 for the first); unknownFailures is the budget used before it.
func (p RetryPolicy) Decide(err error, attempt, unknownFailures int, now time.Time) Decision {
	class := Classify(err)
	switch class {
	case Erased:
		return Decision{outcome: OutcomeDropped, class: class, dropReason: DropErasedDuringProcessing}
	case LeaseLost:
		return Decision{outcome: OutcomeDropped, class: class, dropReason: DropLeaseLost}
	case Permanent:
		return Decision{outcome: OutcomeDead, class: class, errorClass: ErrorClass(err)}
	case Contention:
		return Decision{outcome: OutcomeRetried, class: class, dueAt: now}
	case Retryable:
		return Decision{outcome: OutcomeRetried, class: class, dueAt: now.Add(p.Delay(attempt)), countsAttempt: true}
	default:
		if p.BudgetUsed(unknownFailures + 1) {
			return Decision{outcome: OutcomeDead, class: Unknown, usesBudget: true, errorClass: ErrorClass(err)}
		}
		return Decision{outcome: OutcomeRetried, class: Unknown, dueAt: now.Add(p.Delay(attempt)),
			countsAttempt: true, usesBudget: true}
	}
}

// Completed is the decision of a successful attempt: DONE.
func Completed() Decision { return Decision{outcome: OutcomeDone} }
