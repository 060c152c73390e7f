package readkit

import (
	"time"

	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Timestamp is t as the read APIs and the change feed show a time: RFC 3339 in UTC, or null.
func Timestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// Updated is a row's update time as Timestamp shows it; the zero time (never known) is null.
func Updated(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return Timestamp(&t)
}

// Optional is s, or null when it is empty.
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// PersonFields is a provider's person-data declaration (the members of its payloads) with the
// members of its read API's views, so the change feed's erasure covers exactly what the views
// publish. views are every view the read API answers with and publishes to the change feed;
// their `person` struct tags declare the members that name a person (specs/architecture checks
// that every member that sounds like one is tagged). Errors: a malformed person tag.
func PersonFields(payload contract.PersonFields, views ...any) (contract.PersonFields, error) {
	v, err := PersonViewsOf(views...)
	if err != nil {
		return contract.PersonFields{}, err
	}
	payload.Views = &v
	return payload, nil
}
