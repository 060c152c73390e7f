// Package change holds the rules of the change feed: what a change is (a type, a stable
// subject and the entity as the read API shows it), where a consumer stands in the feed (a
// cursor) and what a feed request may ask for (limit, wait).
package change

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Errors of the feed's rules.
var (
	// ErrInvalidType: a type that is not <provider>.<entity>.<verb> in lower case.
	ErrInvalidType = errors.New("invalid change type")
	// ErrInvalidChange: an empty subject or data that is not a JSON object.
	ErrInvalidChange = errors.New("invalid change")
	// ErrInvalidCursor: a cursor this feed never handed out.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrInvalidLimit: a limit outside 1..MaxLimit.
	ErrInvalidLimit = errors.New("invalid limit")
	// ErrInvalidWait: a wait that is not a duration in 0..MaxWait.
	ErrInvalidWait = errors.New("invalid wait")
	// ErrCursorExpired: retention deleted changes after the cursor; the consumer lost them.
	ErrCursorExpired = errors.New("cursor expired")
)

// Limits of a feed request.
const (
	DefaultLimit = 100
	MaxLimit     = 100
	MaxWait      = 60 * time.Second
)

var (
	typePattern        = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){2}$`)
	productTypePattern = regexp.MustCompile(`^connection\.[a-z][a-z0-9_]*$`)
)

// Type is a change's kind, <provider>.<entity>.<verb> (github.issue.upserted), or
// <entity>.<verb> for an entity of the product itself rather than of a provider
// (connection.state_changed; connection is the only such entity).
type Type struct{ s string }

// ConnectionStateChanged is published when a committed lifecycle transition changed a
// connection's state.
var ConnectionStateChanged = MustType("connection.state_changed")

// ParseType validates s. Errors: ErrInvalidType.
func ParseType(s string) (Type, error) {
	if !typePattern.MatchString(s) && !productTypePattern.MatchString(s) {
		return Type{}, fmt.Errorf("%w: %q", ErrInvalidType, s)
	}
	return Type{s}, nil
}

// MustType is ParseType for the constant types of the adapters; it panics on a bad one.
func MustType(s string) Type {
	t, err := ParseType(s)
	if err != nil {
		panic(err)
	}
	return t
}

// String is the type as published, "<provider>.<entity>.<verb>".
func (t Type) String() string { return t.s }

// IsZero reports whether t is the zero Type, which no change has.
func (t Type) IsZero() bool { return t.s == "" }

// Change is one change a mirror write made, as it is published.
type Change struct {
	typ     Type
	subject string
	data    json.RawMessage
}

// New makes a change: data is the entity as the read API shows it (a JSON object), subject a
// stable id of the entity (github:issue:123). Errors: ErrInvalidChange.
func New(t Type, subject string, data any) (Change, error) {
	if t.IsZero() || subject == "" {
		return Change{}, fmt.Errorf("%w: type and subject are required", ErrInvalidChange)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Change{}, fmt.Errorf("%w: data: %v", ErrInvalidChange, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Change{}, fmt.Errorf("%w: data must be a JSON object", ErrInvalidChange)
	}
	return Change{typ: t, subject: subject, data: raw}, nil
}

// Type is what kind of change it is.
func (c Change) Type() Type { return c.typ }

// Subject names the entity that changed (the read API's id of it).
func (c Change) Subject() string { return c.subject }

// Data is the entity as the read API shows it, with its version.
func (c Change) Data() json.RawMessage { return c.data }

// Cursor is a position in a workspace's feed: the (transaction id, change id) of the last
// change handed out. The feed is ordered by it; the zero cursor is before every change.
type Cursor struct {
	xid uint64
	id  int64
}

// RestoreCursor rebuilds a cursor from storage.
func RestoreCursor(xid uint64, id int64) Cursor { return Cursor{xid: xid, id: id} }

// ParseCursor reads a cursor as String writes it ("<xid>-<id>"); "" is the zero cursor.
// Errors: ErrInvalidCursor.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	x, i, ok := strings.Cut(s, "-")
	if !ok || len(s) > 41 {
		return Cursor{}, fmt.Errorf("%w: %q", ErrInvalidCursor, s)
	}
	xid, err1 := strconv.ParseUint(x, 10, 64)
	id, err2 := strconv.ParseInt(i, 10, 64)
	if err1 != nil || err2 != nil || id < 0 || (xid == 0) != (id == 0) ||
		strconv.FormatUint(xid, 10) != x || strconv.FormatInt(id, 10) != i {
		return Cursor{}, fmt.Errorf("%w: %q", ErrInvalidCursor, s)
	}
	return Cursor{xid: xid, id: id}, nil
}

// String is the cursor as clients send it back in after= and Last-Event-ID.
func (c Cursor) String() string {
	return strconv.FormatUint(c.xid, 10) + "-" + strconv.FormatInt(c.id, 10)
}

// IsZero reports whether c is the start of the feed (no change read yet).
func (c Cursor) IsZero() bool { return c == Cursor{} }

// Xid is the transaction id part of the cursor: the feed hands out changes in commit order.
func (c Cursor) Xid() uint64 { return c.xid }

// ID is the change's id within its transaction.
func (c Cursor) ID() int64 { return c.id }

// Before reports whether c sorts before o in the feed.
func (c Cursor) Before(o Cursor) bool {
	return c.xid < o.xid || (c.xid == o.xid && c.id < o.id)
}

// Stored is a committed change as the feed hands it out.
type Stored struct {
	ID         int64
	Cursor     Cursor
	Type       string
	Subject    string
	OccurredAt time.Time
	Data       json.RawMessage
}

// ParseLimit reads a request's limit ("" is DefaultLimit). Errors: ErrInvalidLimit.
func ParseLimit(s string) (int, error) {
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, fmt.Errorf("%w: %q (1..%d)", ErrInvalidLimit, s, MaxLimit)
	}
	return n, nil
}

// ParseWait reads a request's wait ("" is no wait; "30s", "1m", or seconds "30"). Errors:
// ErrInvalidWait.
func ParseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.Atoi(s)
		if nerr != nil {
			return 0, fmt.Errorf("%w: %q", ErrInvalidWait, s)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > MaxWait {
		return 0, fmt.Errorf("%w: %q (0..%s)", ErrInvalidWait, s, MaxWait)
	}
	return d, nil
}
