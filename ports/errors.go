package ports

import (
	"errors"
	"fmt"
)

// Error kinds that cross the ports. adapters/http maps them to statuses in one place.
var (
	ErrUnauthenticated = errors.New("unauthenticated")         // 401
	ErrForbidden       = errors.New("forbidden")               // 403
	ErrNotFound        = errors.New("not found")               // 404
	ErrConflict        = errors.New("conflict")                // 409
	ErrMalformed       = errors.New("malformed")               // 400
	ErrUnprocessable   = errors.New("unprocessable")           // 422: well formed, names nothing this instance has
	ErrTooLarge        = errors.New("too large")               // 413
	ErrUnavailable     = errors.New("temporarily unavailable") // 503 with Retry-After
	// ErrTooManyRequests: the caller has as many requests of this kind in flight as it may
	// (429 with Retry-After); others' requests are not affected.
	ErrTooManyRequests = errors.New("too many requests in flight") // 429 with Retry-After
)

// RejectedError is a refused webhook delivery: Kind is one of the sentinels above, Reason the
// kebab-case reason counted in webhook_rejected_total{provider,reason} and written to the
// admission log. Detail may say more in logs; it never reaches a response.
type RejectedError struct {
	Kind   error
	Reason string
	Detail string
}

// Error names the reason and the kind, with the detail when there is one.
func (e *RejectedError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("rejected (%s): %s", e.Reason, e.Detail)
	}
	return "rejected (" + e.Reason + ")"
}

// Unwrap is the kind (ErrUnauthenticated, ErrMalformed, …), for errors.Is.
func (e *RejectedError) Unwrap() error { return e.Kind }

// Reject builds a RejectedError.
func Reject(kind error, reason, detail string) error {
	return &RejectedError{Kind: kind, Reason: reason, Detail: detail}
}
