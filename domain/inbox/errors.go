package inbox

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

var (
	// ErrLeaseLost: the write named an epoch older than the row's current lease, or the row is
	// no longer LEASED. The work is dropped (integration_message_dropped_total{reason="lease-lost"}).
	ErrLeaseLost = errors.New("lease lost")
	// ErrErased: the delivery row no longer exists (person erasure, workspace deletion, or a
	// handler that deleted its own event). Further writes and the completion stop.
	ErrErased = errors.New("delivery erased during processing")
	// ErrBusy: a SKIP LOCKED fence found a required row briefly held (renewal, workspace
	// operation, erasure's copy fence). Expected contention: retried in order after a short,
	// jittered, growing delay, without using any budget.
	ErrBusy = errors.New("required row busy")
	// ErrNotDue: a claim of a row whose due time has not come.
	ErrNotDue = errors.New("delivery not due")
	// ErrInvalidPayload: the body is not UTF-8 JSON free of NUL (raw or escaped).
	ErrInvalidPayload = errors.New("invalid payload")
)

// TransitionError is an illegal state transition, carrying the offending values.
type TransitionError struct {
	From   State
	Action string
}

// Error names the transition and the state that refused it.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot %s a %s delivery", e.Action, e.From)
}

// PayloadParsingError proves a permanent failure: anywhere in a handler error's cause chain it
// makes the row DEAD on its first attempt. Provider adapters wrap their decode errors in it.
type PayloadParsingError struct{ Err error }

// Error says the payload could not be parsed, with the parser's error.
func (e *PayloadParsingError) Error() string { return "payload parsing: " + e.Err.Error() }

// Unwrap is the parser's error.
func (e *PayloadParsingError) Unwrap() error { return e.Err }

// ParsingFailure wraps err as a permanent payload-parsing failure.
func ParsingFailure(err error) error { return &PayloadParsingError{Err: err} }

// TransientError marks a database failure that a later attempt gets past: a lost or refused
// connection (transport), or, with Conflict, a deadlock, a serialization failure or a lock
// timeout. Retried with bounded exponential delay and not counted against the unknown-failure
// budget. Provider API clients return *ProviderError instead.
type TransientError struct {
	Op  string
	Err error
	// Conflict: the database ended the statement to resolve a conflict between transactions
	// (SQLSTATE 40001, 40P01, 55P03), not because it could not be reached.
	Conflict bool
}

// Error names the operation and its cause.
func (e *TransientError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap is the transport or database error.
func (e *TransientError) Unwrap() error { return e.Err }

// Transient wraps err as a transient (transport) failure of operation op.
func Transient(op string, err error) error { return &TransientError{Op: op, Err: err} }

// DatabaseConflict wraps err as a deadlock, serialization failure or lock timeout of op.
func DatabaseConflict(op string, err error) error {
	return &TransientError{Op: op, Err: err, Conflict: true}
}

// ProviderFailure is the closed set of ways a provider API call fails.
type ProviderFailure struct{ s string }

var (
	// ProviderTransport: no answer (connection refused or reset, timeout, a body cut off).
	ProviderTransport = ProviderFailure{"transport"}
	// ProviderServerError: a 5xx answer.
	ProviderServerError = ProviderFailure{"server-error"}
	// ProviderRateLimited: 429, or a rate-limit answer of the provider's own kind (GitHub's
	// 403 with X-RateLimit-Remaining 0 or Retry-After, Slack's "ratelimited").
	ProviderRateLimited = ProviderFailure{"rate-limited"}
	// ProviderRefused: any other 4xx answer (or a provider-level refusal in a 2xx body).
	ProviderRefused = ProviderFailure{"refused"}
	// ProviderUnreadable: an answer that is not the documented shape, or larger than the
	// client's bound (a proxy's HTML error page, a very long list).
	ProviderUnreadable = ProviderFailure{"unreadable"}
)

// String is the failure kind's name.
func (k ProviderFailure) String() string { return k.s }

// IsZero reports whether k is the zero ProviderFailure.
func (k ProviderFailure) IsZero() bool { return k.s == "" }

// maxProviderWait bounds a wait a provider asks for: GitHub's rate-limit window is an hour, and
// a misread header must not park a scope for days.
const maxProviderWait = time.Hour

// ProviderError is a failed provider API call, as every provider client returns it. It is never
// a permanent failure: what a provider answered says nothing about the stored payload (only a
// *PayloadParsingError does). Transport, server errors and rate limits are retried without
// budget, no earlier than RetryAfter; refusals and unreadable answers use the unknown-failure
// budget. It carries no token, no response body and no query string.
type ProviderError struct {
	Provider string          // "github"
	Op       string          // "GET /repos/{owner}/{repo}/commits/{ref}/check-runs", without query
	Kind     ProviderFailure // what went wrong
	Status   int             // the HTTP status; 0 without an answer
	// RetryAfter is how long the provider asked to wait (Retry-After, or the time until a
	// rate-limit reset); 0 when it did not say. The retry waits at least this long.
	RetryAfter time.Duration
	Err        error // the cause (a transport or decode error), or nil
}

// Error names the provider, the call and the status, never a response body.
func (e *ProviderError) Error() string {
	msg := e.Provider + " api " + e.Op + ": " + e.Kind.s
	if e.Status != 0 {
		msg += " (status " + strconv.Itoa(e.Status) + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap is the underlying transport or status error.
func (e *ProviderError) Unwrap() error { return e.Err }

// Wait is RetryAfter bounded to an hour and never negative.
func (e *ProviderError) Wait() time.Duration { return min(max(e.RetryAfter, 0), maxProviderWait) }

// FenceRejections remembers every fence rejection (busy, erased, lease lost) the inbox returned
// to one dispatch, so that a handler which catches one and returns nil cannot end its delivery
// as DONE with a step unfinished: the seed's "a caught write-fence failure still reaches the
// consumer". It also remembers whether a committed step deleted the delivery's own row on
// purpose, so the consumer can tell that successful handling from an erasure that came after
// the handler's last write. Safe for concurrent use.
type FenceRejections struct {
	mu                 sync.Mutex
	erased, lost, busy error
	ownDeletion        bool
}

// RecordOwnDeletion remembers that a step which declared it deletes its own event committed.
func (r *FenceRejections) RecordOwnDeletion() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ownDeletion = true
}

// DeletedOwnEvent reports whether a committed step of the dispatch deleted its own event: a row
// found gone when the outcome is written is then successful handling; otherwise it was erased.
func (r *FenceRejections) DeletedOwnEvent() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ownDeletion
}

// Record remembers err if it is a fence rejection (the first of each kind).
func (r *FenceRejections) Record(err error) {
	if r == nil || err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case errors.Is(err, ErrErased):
		if r.erased == nil {
			r.erased = err
		}
	case errors.Is(err, ErrLeaseLost):
		if r.lost == nil {
			r.lost = err
		}
	case errors.Is(err, ErrBusy):
		if r.busy == nil {
			r.busy = err
		}
	}
}

// Verdict is what the dispatch ends with, given what the handler returned. A nil from a handler
// that met a rejection becomes that rejection (erased before lease lost before busy, the order
// Classify judges in). An error of the handler stands, except that an erasure or a lost lease
// it met always wins: nothing the handler says may be written for a row that is gone or owned
// by a newer lease.
func (r *FenceRejections) Verdict(handlerErr error) error {
	if r == nil {
		return handlerErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	final := r.erased
	if final == nil {
		final = r.lost
	}
	switch {
	case handlerErr == nil && final == nil:
		return r.busy
	case handlerErr == nil:
		return final
	case final != nil && !errors.Is(handlerErr, ErrErased) && !errors.Is(handlerErr, ErrLeaseLost):
		return errors.Join(final, handlerErr)
	}
	return handlerErr
}

// PanicError is a recovered panic (the Go form of the seed's stack overflow). It uses the
// unknown-failure budget; Frames keeps sanitized stack frames (function names only).
type PanicError struct {
	ValueType string
	Frames    []string
}

// Error names the type of the value the handler panicked with, never the value.
func (e *PanicError) Error() string { return "handler panicked with " + e.ValueType }

// RecursionLimitError is recursive handler code that went deeper than Limit levels
// (dispatch.Descend). A Go stack overflow is a fatal error that no recover catches: it ends the
// whole process. Recursion that must stop before the stack does descends through the guard, and
// its error, like a panic, uses the unknown-failure budget (the seed's stack overflow).
type RecursionLimitError struct {
	Limit int
}

// Error says the handler exceeded the recursion limit.
func (e *RecursionLimitError) Error() string {
	return fmt.Sprintf("handler recursion deeper than %d levels", e.Limit)
}

// IsFenceRejection reports whether err is a rejected inbox write (lease lost, erased, or busy).
// Provider code with a fallback (try another source, log and continue) must return such an
// error unchanged before it logs or falls back: swallowing it would let a handler write on
// after its lease was taken back or its event erased.
func IsFenceRejection(err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrErased) || errors.Is(err, ErrBusy)
}

// httpDate is the IMF-fixdate layout of an HTTP date (RFC 9110), as Retry-After may carry it.
const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date, as the wait from
// now; 0 when it is absent, malformed or in the past. Provider clients use it to fill
// ProviderError.RetryAfter.
func ParseRetryAfter(value string, now time.Time) time.Duration {
	if value == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(maxProviderWait/time.Second))) * time.Second
	}
	if t, err := time.Parse(httpDate, value); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// UntilReset reads a rate-limit reset given in Unix seconds (GitHub's X-RateLimit-Reset,
// GitLab's RateLimit-Reset) as the wait from now; 0 when it is absent, malformed or past.
func UntilReset(unixSeconds string, now time.Time) time.Duration {
	secs, err := strconv.ParseInt(unixSeconds, 10, 64)
	if err != nil || secs <= 0 {
		return 0
	}
	if t := time.Unix(secs, 0); t.After(now) {
		return t.Sub(now)
	}
	return 0
}
