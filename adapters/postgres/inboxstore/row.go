package inboxstore

import (
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// deliveryRow holds the columns of deliveryColumns as scanned, with NULLs as nil pointers.
type deliveryRow struct {
	id              int64
	workspaceID     *int64
	provider        string
	eventType       string
	deliveryKey     string
	subject         string
	scopeKey        string
	state           string
	attempt         int32
	unknownFailures int32
	leaseEpoch      int64
	leasedUntil     *time.Time
	dueAt           time.Time
	receivedAt      time.Time
	endedAt         *time.Time
	errorClass      *string
	replayedBy      *int64
	replayedAt      *time.Time
}

// targets lists scan destinations in deliveryColumns order.
func (r *deliveryRow) targets() []any {
	return []any{&r.id, &r.workspaceID, &r.provider, &r.eventType, &r.deliveryKey, &r.subject,
		&r.scopeKey, &r.state, &r.attempt, &r.unknownFailures, &r.leaseEpoch, &r.leasedUntil, &r.dueAt,
		&r.receivedAt, &r.endedAt, &r.errorClass, &r.replayedBy, &r.replayedAt}
}

// delivery restores the domain delivery, skipping creation-time checks.
func (r *deliveryRow) delivery() (inbox.Delivery, error) {
	state, err := inbox.ParseState(r.state)
	if err != nil {
		return inbox.Delivery{}, fmt.Errorf("delivery %d: %w", r.id, err)
	}
	return inbox.RestoreDelivery(inbox.Stored{
		ID:              r.id,
		WorkspaceID:     deref(r.workspaceID),
		Provider:        provider.Restore(r.provider),
		EventType:       r.eventType,
		DeliveryKey:     r.deliveryKey,
		Subject:         r.subject,
		ScopeKey:        r.scopeKey,
		State:           state,
		Attempt:         int(r.attempt),
		UnknownFailures: int(r.unknownFailures),
		LeaseEpoch:      inbox.Epoch(r.leaseEpoch),
		LeasedUntil:     deref(r.leasedUntil),
		DueAt:           r.dueAt,
		ReceivedAt:      r.receivedAt,
		EndedAt:         deref(r.endedAt),
		ErrorClass:      deref(r.errorClass),
		ReplayedBy:      deref(r.replayedBy),
		ReplayedAt:      deref(r.replayedAt),
	}), nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// nullable is the inverse of deref for writes: the zero value is stored as NULL.
func nullable[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
