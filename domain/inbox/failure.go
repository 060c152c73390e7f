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
	// Retryable: a database or provider transport failure (TransientError). Bounded backoff, no
	// budget used.
	Retryable = FailureClass{"TRANSIENT"}
	// Contention: a required row was briefly busy. Retried at once in order, no budget used.
	Contention = FailureClass{"CONTENTION"}
	// Unknown: anything else, including a recovered panic. Uses the unknown-failure budget.
	Unknown = FailureClass{"UNKNOWN"}
	// LeaseLost: a newer lease owns the row; this claimer writes nothing more.
	LeaseLost = FailureClass{"LEASE_LOST"}
	// Erased: the row is gone; nothing is written and nothing retried.
	Erased = FailureClass{"ERASED"}
)

func (c FailureClass) String() string { return c.s }
func (c FailureClass) IsZero() bool   { return c.s == "" }

// Classify decides the class of a handler error by looking through its whole wrapped chain
// (errors.As / errors.Is follow Unwrap and joined errors). This is the one place that decides.
// Fence outcomes win over everything: once the lease is lost or the row is erased, nothing the
// handler says may be written. A parsing error proves permanence wherever it sits.
func Classify(err error) FailureClass {
	var (
		parsing   *PayloadParsingError
		transient *TransientError
	)
	switch {
	case err == nil:
		return FailureClass{}
	case errors.Is(err, ErrErased):
		return Erased
	case errors.Is(err, ErrLeaseLost):
		return LeaseLost
	case errors.As(err, &parsing):
		return Permanent
	case errors.Is(err, ErrBusy):
		return Contention
	case errors.As(err, &transient):
		return Retryable
	default:
		return Unknown
	}
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
