package restkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Call is one request of a provider's REST client and how its answer maps to the inbox's
// failure table. Every failure is an *inbox.ProviderError naming Provider and Op, never a
// token or a response body.
type Call struct {
	// Provider is the ProviderError's provider ("github").
	Provider string
	// Op is the ProviderError's operation: the method and the escaped path ("GET /projects/7").
	Op string
	// Table answers how a non-2xx answer fails (Status).
	Table func(*http.Response) Table
	// MaxBodyBytes bounds the answer's body.
	MaxBodyBytes int64
	// TooLarge is the cause of the ProviderUnreadable failure of a body over MaxBodyBytes.
	TooLarge error
}

// StatusError is the cause of the failure of a non-2xx answer: the API ("gitlab api"), the
// call's operation and the status, never a body.
type StatusError struct {
	API    string
	Op     string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d", e.API, e.Op, e.Status)
}

// Table is what a provider says of one non-2xx answer.
type Table struct {
	// NotFound, when not nil, wraps the ProviderRefused failure of a 404 or 410.
	NotFound error
	// RateLimited: the answer is a rate limit though its status is not 429 (GitHub's 403).
	RateLimited bool
	// Wait is how long a rate-limited or 5xx answer asks to wait (0: not said).
	Wait time.Duration
}

// Failure is the call's *inbox.ProviderError.
func (c Call) Failure(kind inbox.ProviderFailure, status int, cause error) *inbox.ProviderError {
	return &inbox.ProviderError{Provider: c.Provider, Op: c.Op, Kind: kind, Status: status, Err: cause}
}

// Status is the failure of an answer with status as t says, around a *StatusError: nil for
// 2xx; 429 and t's rate limits ProviderRateLimited and 5xx ProviderServerError, both retried
// after t.Wait; every other status ProviderRefused (wrapped in t.NotFound for 404 and 410).
func (c Call) Status(status int, t Table) error {
	cause := &StatusError{API: c.Provider + " api", Op: c.Op, Status: status}
	var kind inbox.ProviderFailure
	switch {
	case status >= 200 && status < 300:
		return nil
	case t.NotFound != nil && (status == http.StatusNotFound || status == http.StatusGone):
		return fmt.Errorf("%w: %w", t.NotFound, c.Failure(inbox.ProviderRefused, status, cause))
	case status == http.StatusTooManyRequests || t.RateLimited:
		kind = inbox.ProviderRateLimited
	case status >= 500:
		kind = inbox.ProviderServerError
	default:
		return c.Failure(inbox.ProviderRefused, status, cause)
	}
	e := c.Failure(kind, status, cause)
	e.RetryAfter = t.Wait
	return e
}

// Do sends req with hc and decodes a 2xx answer's JSON body into v (nil: the body is not
// read); it answers the response, its body closed (status and header: pagination). Failures: ProviderTransport (the
// request or the read of the body), Status's, ProviderUnreadable (a body over MaxBodyBytes or
// not v's JSON).
func (c Call) Do(hc *http.Client, req *http.Request, v any) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		// *url.Error names the URL, which carries no credentials (ParseRoot refused them).
		return nil, c.Failure(inbox.ProviderTransport, 0, err)
	}
	defer Close(resp.Body)
	if err := c.Status(resp.StatusCode, c.Table(resp)); err != nil {
		return nil, err
	}
	if v == nil {
		return resp, nil
	}
	body, tooLarge, err := ReadAtMost(resp.Body, c.MaxBodyBytes)
	if err != nil {
		return nil, c.Failure(inbox.ProviderTransport, resp.StatusCode, err)
	}
	if tooLarge {
		return nil, c.Failure(inbox.ProviderUnreadable, resp.StatusCode, c.TooLarge)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, c.Failure(inbox.ProviderUnreadable, resp.StatusCode, err)
	}
	return resp, nil
}
