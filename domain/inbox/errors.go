package inbox

import (
	"errors"
	"fmt"
)

var (
	// ErrLeaseLost: the write named an epoch older than the row's current lease, or the row is
	// no longer LEASED. The work is dropped (integration_message_dropped_total{reason="lease-lost"}).
	ErrLeaseLost = errors.New("lease lost")
	// ErrErased: the delivery row no longer exists (person erasure, workspace deletion, or a
	// handler that deleted its own event). Further writes and the completion stop.
	ErrErased = errors.New("delivery erased during processing")
	// ErrBusy: a required row is briefly held (renewal, workspace operation, erasure's copy
	// fence). Expected contention: retried at once, in order, without using any budget.
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

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot %s a %s delivery", e.Action, e.From)
}

// PayloadParsingError proves a permanent failure: anywhere in a handler error's cause chain it
// makes the row DEAD on its first attempt. Provider adapters wrap their decode errors in it.
type PayloadParsingError struct{ Err error }

func (e *PayloadParsingError) Error() string { return "payload parsing: " + e.Err.Error() }
func (e *PayloadParsingError) Unwrap() error { return e.Err }

// ParsingFailure wraps err as a permanent payload-parsing failure.
func ParsingFailure(err error) error { return &PayloadParsingError{Err: err} }

// TransientError marks a database or provider transport failure: retried with bounded
// exponential delay and not counted against the unknown-failure budget.
type TransientError struct {
	Op  string
	Err error
}

func (e *TransientError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient wraps err as a transient failure of operation op.
func Transient(op string, err error) error { return &TransientError{Op: op, Err: err} }

// PanicError is a recovered panic (the Go form of the seed's stack overflow). It uses the
// unknown-failure budget; Frames keeps sanitized stack frames (function names only).
type PanicError struct {
	ValueType string
	Frames    []string
}

func (e *PanicError) Error() string { return "handler panicked with " + e.ValueType }

// IsFenceRejection reports whether err is a rejected inbox write (lease lost, erased, or busy).
// Provider code with a fallback (try another source, log and continue) must return such an
// error unchanged before it logs or falls back: swallowing it would let a handler write on
// after its lease was taken back or its event erased.
func IsFenceRejection(err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrErased) || errors.Is(err, ErrBusy)
}
