package ports

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// DeliveryFilter narrows the deliveries browser; a zero field matches every row. Every field
// is an exact match but the received-at range (ReceivedAfter inclusive, ReceivedBefore
// exclusive).
type DeliveryFilter struct {
	State          inbox.State // zero: every state
	Provider       string      // the provider label, GITHUB, GITLAB, SLACK, OUTLINE
	EventType      string
	ErrorClass     string // a DEAD row's error class ("PERMANENT:*json.SyntaxError")
	Subject        string
	ScopeKey       string
	DeliveryKey    string
	ReceivedAfter  time.Time
	ReceivedBefore time.Time
}

// DeliveryItem is one row of the deliveries browser: the delivery in any state and when its
// latest attempt began (zero when it was never claimed).
type DeliveryItem struct {
	Delivery      inbox.Delivery
	LastAttemptAt time.Time
}

// DeliveryStep is a committed handler step of a delivery.
type DeliveryStep struct {
	Name        string
	CommittedAt time.Time
}

// DeliveryAttempt is one attempt of a delivery (one lease), as its outcome write recorded it.
type DeliveryAttempt struct {
	Attempt   int
	StartedAt time.Time // zero for a lease taken before attempts were recorded
	EndedAt   time.Time
	Server    string      // the owner name of the claiming server
	Outcome   string      // done, retried, dead, lease-expired, released
	Cause     inbox.Cause // the failure table's cause; zero for done and released
}

// Delivery is one inbox row as an operator inspects it: the delivery in any state with its
// payload, headers, committed steps and attempts (oldest first).
type Delivery struct {
	DeliveryItem
	Payload  json.RawMessage
	Headers  map[string]string
	Steps    []DeliveryStep
	Attempts []DeliveryAttempt
	// TraceID is the W3C trace id (32 lower-case hex digits) of the webhook request that
	// admitted the row, whose trace holds every attempt; "" when that server traced nothing.
	TraceID string
}

// DeliveryListCap bounds what one deliveries list counts and reaches: total is exact up to
// it and capped at it beyond (DeliveryReader.ListDeliveries says so), and pages reach the
// first DeliveryListCap matches (narrow the received-at range to go further), so a page costs
// the same at millions of retained rows as at thousands.
const DeliveryListCap = 10_000

// DeliveryReader is the deliveries browser's read of the inbox. Every method binds the
// workspace: workspaceID 0 means the installation rows (NULL workspace) and nothing else, any
// other id that workspace's rows only.
type DeliveryReader interface {
	// ListDeliveries pages the rows that match filter, newest first (received at, then id),
	// and counts them up to DeliveryListCap (capped reports that more match). Errors:
	// ErrMalformed for a page beyond DeliveryListCap matches.
	ListDeliveries(ctx context.Context, workspaceID int64, filter DeliveryFilter, page PageRequest) (items []DeliveryItem, total int, capped bool, err error)
	// Delivery reads one row in any state with its payload, headers, steps and attempts.
	// Errors: ErrNotFound (no such row there).
	Delivery(ctx context.Context, workspaceID, id int64) (Delivery, error)
}
