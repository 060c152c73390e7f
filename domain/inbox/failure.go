package inbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// FailureClass is the closed set of ways a handler attempt can end other than success.
type FailureClass struct{ s string }

var (
	// Permanent: a PayloadParsingError anywhere in the cause chain. DEAD on the first attempt.
	Permanent = FailureClass{"PERMANENT"}
	// Retryable: a database or provider transport failure, a deadlock, a serialization failure,
	// a lock timeout, a provider's 5xx or rate limit. Bounded backoff, no budget used.
	Retryable = FailureClass{"TRANSIENT"}
	// Contention: a SKIP LOCKED fence found a required row busy. A short jittered delay, no
	// budget used.
	Contention = FailureClass{"CONTENTION"}
	// Unknown: anything else, including a recovered panic, a provider's 4xx and an unreadable
	// provider answer. Uses the unknown-failure budget.
	Unknown = FailureClass{"UNKNOWN"}
	// LeaseLost: a newer lease owns the row; this claimer writes nothing more.
	LeaseLost = FailureClass{"LEASE_LOST"}
	// Erased: the row is gone; nothing is written and nothing retried.
	Erased = FailureClass{"ERASED"}
)

// String is the class's name.
func (c FailureClass) String() string { return c.s }

// IsZero reports whether c is the zero FailureClass.
func (c FailureClass) IsZero() bool { return c.s == "" }

// Cause is one row of the failure table: why an attempt failed, as
// integration_consumer_retry_total{cause} and the runbook name it.
type Cause struct{ s string }

var (
	// CauseContention: a SKIP LOCKED fence found a required row busy (a renewal, a workspace
	// operation, person erasure's copy fence).
	CauseContention = Cause{"contention"}
	// CauseDatabaseTransport: the database could not be reached or the connection broke.
	CauseDatabaseTransport = Cause{"database-transport"}
	// CauseDatabaseConflict: a deadlock, a serialization failure or a lock timeout.
	CauseDatabaseConflict = Cause{"database-conflict"}
	// CauseProviderTransport: a provider API gave no answer or a 5xx.
	CauseProviderTransport = Cause{"provider-transport"}
	// CauseProviderRateLimit: a provider API answered 429 or its own rate-limit answer.
	CauseProviderRateLimit = Cause{"provider-rate-limit"}
	// CauseProviderRefused: a provider API answered another 4xx (a refused token, a 422).
	CauseProviderRefused = Cause{"provider-refused"}
	// CauseProviderUnreadable: a provider API answer that is not its documented shape or is
	// larger than the client reads.
	CauseProviderUnreadable = Cause{"provider-unreadable"}
	// CausePayload: the stored delivery's payload does not parse (PayloadParsingError).
	CausePayload = Cause{"payload"}
	// CausePanic: the handler panicked (the seed's stack overflow).
	CausePanic = Cause{"panic"}
	// CauseUnknown: anything else.
	CauseUnknown = Cause{"unknown"}
	// CauseLeaseExpired: the lease ran out before an outcome was recorded (the reaper's).
	CauseLeaseExpired = Cause{"lease-expired"}
)

// String is the cause as attempts and dead letters record it ("provider-refused", …).
func (c Cause) String() string { return c.s }

// IsZero reports whether c is no cause (a done or released attempt).
func (c Cause) IsZero() bool { return c.s == "" }

// Sentence is the failure table's human sentence for the cause ("what it is" in
// docs/failures.md): what an operator reads beside an attempt's error class.
// It describes the class of failure, never the failure's message. "" for a cause not in the
// table.
func (c Cause) Sentence() string { return causeSentences[c] }

// CauseNamed is the cause whose String is name (false when the table has no such cause).
func CauseNamed(name string) (Cause, bool) {
	for _, r := range failureTable {
		if r.Cause.s == name {
			return r.Cause, true
		}
	}
	return Cause{}, false
}

var causeSentences = map[Cause]string{
	CauseContention:         "A row the handler needed was busy (a lease renewal, an outcome, a workspace operation or a person erasure held it); the attempt was given back.",
	CauseDatabaseTransport:  "The database could not be reached or the connection broke.",
	CauseDatabaseConflict:   "The database reported a deadlock, a serialization failure or a lock timeout.",
	CauseProviderTransport:  "A provider API gave no answer or answered with a server error (5xx).",
	CauseProviderRateLimit:  "A provider API answered that its rate limit was reached.",
	CauseProviderRefused:    "A provider API refused the request (a 4xx answer such as a refused token or a 422).",
	CauseProviderUnreadable: "A provider API answer was not in its documented shape or was larger than the client reads.",
	CausePayload:            "The stored delivery's payload does not parse; it will not parse on a retry either.",
	CausePanic:              "The handler panicked.",
	CauseUnknown:            "The handler failed for a reason outside the other classes (a handler timeout and a recursion stopped by the depth limit included).",
	CauseLeaseExpired:       "The attempt's lease ran out before an outcome was recorded (the server stopped or the handler ran too long); the reaper took the row back.",
}

// DelayRule says when a failed row is due again.
type DelayRule struct{ s string }

var (
	// DelayContention: ContentionBaseDelay doubled per consecutive contention retry of the row,
	// at most ContentionMaxDelay, jittered down to half: short, growing, well under a second.
	DelayContention = DelayRule{"contention"}
	// DelayBackoff: the policy's base delay doubled per attempt, at most its max delay
	// (POISON_BASE_DELAY 2 s to POISON_MAX_DELAY 5 min).
	DelayBackoff = DelayRule{"backoff"}
	// DelayProviderWait: DelayBackoff, or the provider's Retry-After or rate-limit reset when
	// that is later (at most an hour).
	DelayProviderWait = DelayRule{"backoff-or-provider-wait"}
	// DelayAtOnce: due again at once (an expired lease: its handler ran for a lease already).
	DelayAtOnce = DelayRule{"at-once"}
	// DelayNone: the row is DEAD, never due again.
	DelayNone = DelayRule{"none"}
)

// String is the rule's name.
func (r DelayRule) String() string { return r.s }

// FailureRule is one row of the table: a cause, its class, whether it counts against the
// unknown-failure budget, and when the row is due again.
type FailureRule struct {
	Cause        Cause
	Class        FailureClass
	CountsBudget bool
	Delay        DelayRule
}

// failureTable is the one classification table (docs/failures.md shows it).
var failureTable = []FailureRule{
	{CauseContention, Contention, false, DelayContention},
	{CauseDatabaseTransport, Retryable, false, DelayBackoff},
	{CauseDatabaseConflict, Retryable, false, DelayBackoff},
	{CauseProviderTransport, Retryable, false, DelayProviderWait},
	{CauseProviderRateLimit, Retryable, false, DelayProviderWait},
	{CauseProviderRefused, Unknown, true, DelayBackoff},
	{CauseProviderUnreadable, Unknown, true, DelayBackoff},
	{CausePayload, Permanent, false, DelayNone},
	{CausePanic, Unknown, true, DelayBackoff},
	{CauseUnknown, Unknown, true, DelayBackoff},
	{CauseLeaseExpired, Unknown, true, DelayAtOnce},
}

// FailureTable returns the classification table, one row per cause.
func FailureTable() []FailureRule { return append([]FailureRule(nil), failureTable...) }

// RuleOf returns the table row of c (false for a cause not in the table).
func RuleOf(c Cause) (FailureRule, bool) {
	for _, r := range failureTable {
		if r.Cause == c {
			return r, true
		}
	}
	return FailureRule{}, false
}

// RetryCauses lists the causes a row can be retried for: the label values of
// integration_consumer_retry_total{cause}.
func RetryCauses() []Cause {
	var out []Cause
	for _, r := range failureTable {
		if r.Delay != DelayNone {
			out = append(out, r.Cause)
		}
	}
	return out
}

// CauseOf finds the table row of a handler error by looking through its whole wrapped chain
// (errors.As / errors.Is follow Unwrap and joined errors). This is the one place that decides.
// A fence outcome (erased, lease lost) is no cause: it drops the work (zero Cause). A parsing
// error proves permanence wherever it sits; a provider's answer never does.
func CauseOf(err error) Cause {
	var (
		parsing   *PayloadParsingError
		prov      *ProviderError
		transient *TransientError
		panicked  *PanicError
	)
	switch {
	case err == nil, errors.Is(err, ErrErased), errors.Is(err, ErrLeaseLost):
		return Cause{}
	case errors.As(err, &parsing):
		return CausePayload
	case errors.Is(err, ErrBusy):
		return CauseContention
	case errors.As(err, &prov):
		switch prov.Kind {
		case ProviderTransport, ProviderServerError:
			return CauseProviderTransport
		case ProviderRateLimited:
			return CauseProviderRateLimit
		case ProviderUnreadable:
			return CauseProviderUnreadable
		default:
			return CauseProviderRefused
		}
	case errors.As(err, &transient):
		if transient.Conflict {
			return CauseDatabaseConflict
		}
		return CauseDatabaseTransport
	case errors.As(err, &panicked):
		return CausePanic
	default:
		return CauseUnknown
	}
}

// Classify decides the class of a handler error: Erased or LeaseLost for a fence outcome (they
// win over everything: once the lease is lost or the row is erased, nothing the handler says
// may be written), otherwise the class of its cause's table row.
func Classify(err error) FailureClass {
	switch {
	case err == nil:
		return FailureClass{}
	case errors.Is(err, ErrErased):
		return Erased
	case errors.Is(err, ErrLeaseLost):
		return LeaseLost
	}
	r, _ := RuleOf(CauseOf(err))
	return r.Class
}

// ErrorClass is what a DEAD row records and logs about its cause: the failure class and the Go
// type of the innermost cause ("PERMANENT:*json.SyntaxError"). It never holds an error message,
// which can carry payload fragments, tokens or URLs with credentials.
func ErrorClass(err error) string {
	class := Classify(err)
	if class.IsZero() {
		return ""
	}
	var p *PanicError
	if errors.As(err, &p) {
		return class.s + ":panic(" + p.ValueType + ")"
	}
	return class.s + ":" + typeName(rootCause(err))
}

// LeaseExpiredClass is the error class of a row the reaper ends after its attempts were used.
const LeaseExpiredClass = "LeaseExpired"

// IsErrorClass reports whether s is shaped as an error class a row records: the reaper's
// LeaseExpiredClass, or what ErrorClass writes for a class that records an outcome (PERMANENT,
// RETRYABLE, CONTENTION, UNKNOWN), ':' and the Go type of the cause
// ("PERMANENT:*json.SyntaxError", "UNKNOWN:panic(runtime.boundsError)"). LeaseLost and Erased
// write nothing to the row, so no row carries them. Filters (the deliveries browser, dead
// letters, bulk replay) match the stored class exactly: one naming anything else is refused
// rather than answered with nothing, which would hide a typo.
func IsErrorClass(s string) bool {
	if s == LeaseExpiredClass {
		return true
	}
	class, cause, ok := strings.Cut(s, ":")
	if !ok || cause == "" {
		return false
	}
	for _, c := range []FailureClass{Permanent, Retryable, Contention, Unknown} {
		if class == c.s {
			return true
		}
	}
	return false
}

// CauseTypes lists the sanitized Go types of the whole cause chain, outermost first, for the
// log line of a first failure or a dead row.
func CauseTypes(err error) []string {
	var out []string
	for e := err; e != nil; e = unwrapFirst(e) {
		out = append(out, typeName(e))
		if len(out) == 16 {
			break
		}
	}
	return out
}

func rootCause(err error) error {
	for {
		next := unwrapFirst(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func unwrapFirst(err error) error {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap()
	case interface{ Unwrap() []error }:
		if errs := u.Unwrap(); len(errs) > 0 {
			return errs[0]
		}
	}
	return nil
}

// typeName is the package-qualified type name without the import path ("*json.SyntaxError").
// Well-known sentinels are named for what they are, since their type says nothing.
func typeName(err error) string {
	switch {
	case err == context.DeadlineExceeded:
		return "context.DeadlineExceeded"
	case err == context.Canceled:
		return "context.Canceled"
	}
	t := reflect.TypeOf(err)
	name := fmt.Sprintf("%v", t)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		prefix := ""
		if strings.HasPrefix(name, "*") {
			prefix = "*"
		}
		name = prefix + name[i+1:]
	}
	return name
}
