package inboxstore

import "github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"

// deliveryRow is the shared scan of a whole provider_event row (deliveryColumns).
type deliveryRow = pgutil.DeliveryRow

func deref[T any](p *T) T { return pgutil.Deref(p) }

// nullable is the inverse of deref for writes: the zero value is stored as NULL.
func nullable[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
