package githubredelivery

import (
	"context"
	"time"
)

// HookDelivery is one of a GitHub App's recent webhook deliveries as GitHub lists them.
type HookDelivery struct {
	ID         int64
	GUID       string
	StatusCode int // 0: no answer (a timeout)
}

// HookDeliveries is the GitHub App's delivery log (adapters/github/githubapi), read and acted on
// with the App's JWT. Errors: *inbox.ProviderError.
type HookDeliveries interface {
	// ListHookDeliveries reads one page of the App's recent deliveries, newest first; cursor
	// "" is the first page, next "" means no further page.
	ListHookDeliveries(ctx context.Context, cursor string) (page []HookDelivery, next string, err error)
	// RequestRedelivery asks GitHub to deliver delivery id again.
	RequestRedelivery(ctx context.Context, id int64) error
}

// Again says when a guid's redelivery may be requested again: after a request whose
// redelivery did not land either (the guid is still stored nowhere), once the last request is
// After·2^(requests-1) old, while fewer than MaxRequests were made.
type Again struct {
	MaxRequests int
	After       time.Duration
}

// RedeliveryStore is the reconciler's view of the database.
type RedeliveryStore interface {
	// UnknownGUIDs returns the guids that no inbox row of provider carries as its delivery key
	// (in any workspace, installation rows with a NULL workspace included) and whose
	// redelivery may be requested now: never requested, or again as again allows. Errors: a
	// database failure.
	UnknownGUIDs(ctx context.Context, provider string, guids []string, again Again) ([]string, error)
	// ClaimRedelivery records that delivery id of guid is being redelivered (one more request
	// for guid); false when no request may be made now (one was recorded by this or another
	// server, and again does not allow another yet, or no more).
	ClaimRedelivery(ctx context.Context, guid string, id int64, again Again) (bool, error)
	// ReleaseRedelivery takes back the request just claimed for guid after it failed, so a
	// later run asks again: the record goes when it was the first request.
	ReleaseRedelivery(ctx context.Context, guid string) error
}

// RedeliveryMetrics counts github_redeliveries_requested_total.
type RedeliveryMetrics interface {
	RedeliveryRequested()
}

// MetricsFunc is RedeliveryMetrics as one increment (the module's declared counter).
type MetricsFunc func()

// RedeliveryRequested implements RedeliveryMetrics.
func (f MetricsFunc) RedeliveryRequested() { f() }
