// Package erasure models how person erasure and handler writes meet: the ErasureFence decides,
// from what a write transaction observed at its fences, whether the write may commit.
package erasure

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Observation is what a write transaction on the dispatch goroutine saw when it took its
// fences (all taken with SKIP LOCKED, so it never waits on erasure or a renewal).
type Observation struct {
	EventExists       bool        // the event row is still there (read without a lock)
	EventBusy         bool        // the row exists but another transaction holds a conflicting lock
	WorkspaceBusy     bool        // the workspace row is held by a workspace operation
	ErasureInProgress bool        // person erasure holds the copy fence
	State             inbox.State // the row's state, when it could be read
	Epoch             inbox.Epoch // the row's lease epoch, when it could be read
}

// Fence is the dispatch identity a write is fenced by: the event and the claimer's epoch.
type Fence struct {
	eventID int64
	epoch   inbox.Epoch
}

// NewFence makes the fence of one claimed delivery.
func NewFence(eventID int64, epoch inbox.Epoch) (Fence, error) {
	if eventID <= 0 || epoch <= 0 {
		return Fence{}, fmt.Errorf("fence needs an event id and a lease epoch, got %d/%d", eventID, epoch)
	}
	return Fence{eventID: eventID, epoch: epoch}, nil
}

// EventID is the inbox row whose handler took the fence.
func (f Fence) EventID() int64 { return f.eventID }

// Epoch is the row's lease epoch when the fence was taken.
func (f Fence) Epoch() inbox.Epoch { return f.epoch }

// IsZero reports whether f is no fence (work outside a delivery).
func (f Fence) IsZero() bool { return f.eventID == 0 }

// Check judges an observation. Order matters: a missing event stops the work for good (erased);
// erasure in progress or a busy row is expected contention, and the write rolls back before it
// waits, so domain locks cannot deadlock erasure; a changed epoch or state means another
// claimer owns the row now (lease lost).
func (f Fence) Check(o Observation) error {
	switch {
	case !o.EventExists:
		return inbox.ErrErased
	case o.ErasureInProgress:
		return fmt.Errorf("%w: person erasure in progress", inbox.ErrBusy)
	case o.EventBusy:
		return fmt.Errorf("%w: event row %d", inbox.ErrBusy, f.eventID)
	case o.WorkspaceBusy:
		return fmt.Errorf("%w: workspace row", inbox.ErrBusy)
	case o.State != inbox.Leased || o.Epoch != f.epoch:
		return inbox.ErrLeaseLost
	}
	return nil
}
