package pgutil

import (
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// DeliveryColumns are the provider_event columns a DeliveryRow scans, for a row aliased e.
const DeliveryColumns = `e.id, e.workspace_id, e.provider, e.event_type, e.delivery_key, e.subject,
	e.scope_key, e.state, e.attempt, e.unknown_failures, e.lease_epoch, e.leased_until, e.due_at,
	e.received_at, e.ended_at, e.error_class, e.replayed_by, e.replayed_at`

// DeliveryRow holds the columns of DeliveryColumns as scanned, with NULLs as nil pointers: the
// one restore of a provider_event row for every store that reads whole deliveries.
type DeliveryRow struct {
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

// Targets lists scan destinations in DeliveryColumns order.
func (r *DeliveryRow) Targets() []any {
	return []any{&r.id, &r.workspaceID, &r.provider, &r.eventType, &r.deliveryKey, &r.subject,
		&r.scopeKey, &r.state, &r.attempt, &r.unknownFailures, &r.leaseEpoch, &r.leasedUntil, &r.dueAt,
		&r.receivedAt, &r.endedAt, &r.errorClass, &r.replayedBy, &r.replayedAt}
}

// Delivery restores the domain delivery, skipping creation-time checks.
func (r *DeliveryRow) Delivery() (inbox.Delivery, error) {
	state, err := inbox.ParseState(r.state)
	if err != nil {
		return inbox.Delivery{}, fmt.Errorf("delivery %d: %w", r.id, err)
	}
	return inbox.RestoreDelivery(inbox.Stored{
		ID:              r.id,
		WorkspaceID:     Deref(r.workspaceID),
		Provider:        provider.Restore(r.provider),
		EventType:       r.eventType,
		DeliveryKey:     r.deliveryKey,
		Subject:         r.subject,
		ScopeKey:        r.scopeKey,
		State:           state,
		Attempt:         int(r.attempt),
		UnknownFailures: int(r.unknownFailures),
		LeaseEpoch:      inbox.Epoch(r.leaseEpoch),
		LeasedUntil:     Deref(r.leasedUntil),
		DueAt:           r.dueAt,
		ReceivedAt:      r.receivedAt,
		EndedAt:         Deref(r.endedAt),
		ErrorClass:      Deref(r.errorClass),
		ReplayedBy:      Deref(r.replayedBy),
		ReplayedAt:      Deref(r.replayedAt),
	}), nil
}

// Deref is *p, or the zero value for a NULL (nil) column.
func Deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
