package sqlkit

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The change feed's entity versions in SQL (domain/change "Versions"). A mirror row's version
// is the tuple its upsert compares, (source_updated_at, source_event_id) for most tables; its
// text is each part in a fixed-width form joined by "/", so that comparing two texts byte by
// byte compares the tuples: a timestamp as UTC "YYYY-MM-DDTHH:MI:SS.USZ" ('-infinity', a
// provider object without a timestamp, as "0000-00-00T00:00:00.000000Z", before every real
// one), a non-negative bigint as 19 digits with leading zeros.

// VersionTime is the fixed-width text of a timestamptz expression.
func VersionTime(expr string) string {
	return `CASE WHEN ` + expr + ` = '-infinity' THEN '0000-00-00T00:00:00.000000Z' ELSE to_char(` + expr +
		` AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END`
}

// VersionNumber is the fixed-width text of a non-negative bigint expression.
func VersionNumber(expr string) string { return `lpad((` + expr + `)::text, 19, '0')` }

// VersionOf joins parts (VersionTime, VersionNumber) into one version text.
func VersionOf(parts ...string) string { return "(" + strings.Join(parts, " || '/' || ") + ")" }

// MirrorVersion is the version text of the mirror row alias: (source_updated_at,
// source_event_id), the tuple of the mirror's version rule (migrations 00005, 00006).
func MirrorVersion(alias string) string {
	return VersionOf(VersionTime(alias+".source_updated_at"), VersionNumber(alias+".source_event_id"))
}

// At is a version's provider timestamp as a mirror row stores it: a missing one (zero) is
// '-infinity', so it never outranks a real timestamp and the event id alone decides between two
// writes without one.
func At(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}
