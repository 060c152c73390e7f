package ports

import (
	"context"
	"time"
)

// RejectionCounter counts one refused webhook request for the rejection log. It is called on
// the request's path, so it must not do I/O: implementations count in memory.
type RejectionCounter interface {
	// Refused counts one refusal of provider's webhook ("GITHUB"); connectionID is 0 when no
	// connection was matched or named.
	Refused(provider string, connectionID int64, reason string)
}

// RejectionCount is the number of refused requests of one minute and key.
type RejectionCount struct {
	Minute       time.Time
	Provider     string
	ConnectionID int64 // 0: no connection matched
	Reason       string
	Count        int64
}

// RejectionStore keeps the rejection log.
type RejectionStore interface {
	// AddRejections adds counts (summing with what other servers, and this one's earlier
	// flushes, added for the same minute and key) and deletes the minutes before deleteBefore
	// (none when it is zero), in one transaction.
	AddRejections(ctx context.Context, counts []RejectionCount, deleteBefore time.Time) error
	// ListRejections pages the log newest minute first: workspaceID's connections' rows, or
	// every row (refusals no connection matched included) for workspaceID 0.
	ListRejections(ctx context.Context, workspaceID int64, page PageRequest) ([]RejectionCount, int, error)
}
