package githubredelivery

import "context"

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

// RedeliveryStore is the reconciler's view of the database.
type RedeliveryStore interface {
	// UnknownGUIDs returns the guids that no inbox row of provider carries as its delivery key
	// (in any workspace, installation rows with a NULL workspace included) and that no
	// redelivery was requested for. Errors: a database failure.
	UnknownGUIDs(ctx context.Context, provider string, guids []string) ([]string, error)
	// ClaimRedelivery records that delivery id of guid is being redelivered; false when a
	// request for guid was already recorded (by this or another server).
	ClaimRedelivery(ctx context.Context, guid string, id int64) (bool, error)
	// ReleaseRedelivery removes guid's record after a request that failed, so a later run asks
	// again.
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
