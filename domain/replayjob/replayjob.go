// Package replayjob holds the rules of bulk replay (the Operator
// API): which DEAD rows a filter selects, the states of a replay job and how its counts add
// up. The replay of each row is the inbox's single replay (inbox.Delivery.Replay); a job's lease
// follows the inbox's lease rules (an epoch every batch names, a lease that runs out and is
// taken over).
package replayjob

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// State is where a job stands.
type State struct{ s string }

var (
	// Running: rows remain; one server at a time works them in batches.
	Running = State{"RUNNING"}
	// Done: every matched row was replayed or skipped.
	Done = State{"DONE"}
	// Cancelled: an operator stopped it; the batch in flight finished, no later one ran.
	Cancelled = State{"CANCELLED"}
	// Failed: a batch failed in a way a retry cannot mend (the log names the cause types).
	Failed = State{"FAILED"}
)

// String is the state as the API shows it.
func (s State) String() string { return s.s }

// IsZero reports whether s is the zero State.
func (s State) IsZero() bool { return s.s == "" }

// Ended reports whether the job will replay nothing more.
func (s State) Ended() bool { return s != Running && !s.IsZero() }

// ParseState reads a stored state.
func ParseState(v string) (State, error) {
	for _, s := range []State{Running, Done, Cancelled, Failed} {
		if s.s == v {
			return s, nil
		}
	}
	return State{}, fmt.Errorf("unknown replay job state %q", v)
}

// MaxText bounds a text filter value (bytes); longer values cannot match a stored event type or
// error class.
const MaxText = 512

// Filter selects the DEAD rows of a workspace a job replays; a zero field matches every row.
// Times are bounds on the row's end time (dead) and arrival (received): after is inclusive,
// before exclusive.
type Filter struct {
	provider       provider.Provider
	eventType      string
	errorClass     string
	deadAfter      time.Time
	deadBefore     time.Time
	receivedAfter  time.Time
	receivedBefore time.Time
}

// FilterFields is the filter as given: provider by name, times already parsed (the adapter
// that parses them names a bad time itself).
type FilterFields struct {
	Provider                      string
	EventType, ErrorClass         string
	DeadAfter, DeadBefore         time.Time
	ReceivedAfter, ReceivedBefore time.Time
}

// FieldError names the filter field whose value is refused (CONTRACT.md's 400 with "field").
type FieldError struct{ Field string }

// Error names the filter field that was refused.
func (e *FieldError) Error() string { return "invalid replay filter field " + e.Field }

// NewFilter validates f against the providers this server runs. Errors: *FieldError naming
// the field of a closed set given a value outside it (a provider that is not one of providers,
// an error class no row can carry: see inbox.IsErrorClass), or a text value that is not
// UTF-8 or longer than MaxText. A range that matches nothing is valid: the job it starts ends
// at once with nothing matched.
func NewFilter(f FilterFields, providers []provider.Provider) (Filter, error) {
	out := Filter{eventType: f.EventType, errorClass: f.ErrorClass, deadAfter: f.DeadAfter, deadBefore: f.DeadBefore,
		receivedAfter: f.ReceivedAfter, receivedBefore: f.ReceivedBefore}
	for _, t := range []struct{ name, v string }{{"provider", f.Provider}, {"eventType", f.EventType}, {"errorClass", f.ErrorClass}} {
		if len(t.v) > MaxText || !utf8.ValidString(t.v) {
			return Filter{}, &FieldError{Field: t.name}
		}
	}
	if f.Provider != "" {
		out.provider = provider.Restore(f.Provider)
		if !slices.Contains(providers, out.provider) {
			return Filter{}, &FieldError{Field: "provider"}
		}
	}
	if f.ErrorClass != "" && !inbox.IsErrorClass(f.ErrorClass) {
		return Filter{}, &FieldError{Field: "errorClass"}
	}
	return out, nil
}

// RestoreFilter rebuilds a stored filter without the creation-time checks.
func RestoreFilter(f FilterFields) Filter {
	return Filter{provider: provider.Restore(f.Provider), eventType: f.EventType, errorClass: f.ErrorClass,
		deadAfter: f.DeadAfter, deadBefore: f.DeadBefore, receivedAfter: f.ReceivedAfter, receivedBefore: f.ReceivedBefore}
}

// Fields is the filter's values; Provider is "" when the filter takes every provider.
func (f Filter) Fields() FilterFields {
	out := FilterFields{EventType: f.eventType, ErrorClass: f.errorClass, DeadAfter: f.deadAfter, DeadBefore: f.deadBefore,
		ReceivedAfter: f.receivedAfter, ReceivedBefore: f.receivedBefore}
	if !f.provider.IsZero() {
		out.Provider = f.provider.String()
	}
	return out
}

// ErrLimit is what every *LimitError is (errors.Is): a start refused by the workspace's
// Limits (CONTRACT.md's 409 replay-limit).
var ErrLimit = errors.New("replay limit reached")

// Limit names which of Limits a start passed.
type Limit struct{ s string }

var (
	// LimitRunning: the workspace already runs Limits.MaxRunning jobs; one must end first.
	LimitRunning = Limit{"running"}
	// LimitRows: the filter matches more than Limits.MaxRows rows; the operator narrows it.
	LimitRows = Limit{"rows"}
)

// String is the limit's name in the 409 answer's "limit" member ("running", "rows").
func (l Limit) String() string { return l.s }

// LimitError refuses a start: which limit, and its value.
type LimitError struct {
	Limit Limit
	Max   int64
}

// Error names the limit and its value.
func (e *LimitError) Error() string {
	return fmt.Sprintf("replay limit %s (at most %d) reached", e.Limit, e.Max)
}

// Is makes every LimitError ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Limits bound what one workspace's bulk replays may cost: at most maxRunning jobs RUNNING at
// once, and at most maxRows matched rows in one job (its replay_job_row rows, written in the
// start's transaction). A start past either is refused whole, never truncated: a job that
// replayed only some of the rows its filter names would leave the operator guessing which.
type Limits struct{ maxRunning, maxRows int64 }

// NewLimits validates the limits: both at least 1.
func NewLimits(maxRunning, maxRows int64) (Limits, error) {
	if maxRunning < 1 || maxRows < 1 {
		return Limits{}, fmt.Errorf("replay limits: running jobs (%d) and rows per job (%d) must be at least 1", maxRunning, maxRows)
	}
	return Limits{maxRunning: maxRunning, maxRows: maxRows}, nil
}

// IsZero reports limits never made by NewLimits.
func (l Limits) IsZero() bool { return l == Limits{} }

// MaxRunning is the most RUNNING jobs of one workspace.
func (l Limits) MaxRunning() int64 { return l.maxRunning }

// MaxRows is the most rows one job may match.
func (l Limits) MaxRows() int64 { return l.maxRows }

// AdmitRunning decides a start while the workspace runs running jobs. Errors: *LimitError
// LimitRunning when another job would pass MaxRunning.
func (l Limits) AdmitRunning(running int64) error {
	if running >= l.maxRunning {
		return &LimitError{Limit: LimitRunning, Max: l.maxRunning}
	}
	return nil
}

// AdmitRows decides a start whose filter matches matched rows. Errors: *LimitError LimitRows
// past MaxRows.
func (l Limits) AdmitRows(matched int64) error {
	if matched > l.maxRows {
		return &LimitError{Limit: LimitRows, Max: l.maxRows}
	}
	return nil
}

// Progress is a job's counts: every matched row ends replayed or skipped (it was no longer DEAD,
// or no longer stored, when its batch came), so replayed + skipped never passes matched.
type Progress struct {
	Matched, Replayed, Skipped int64
}

// Add counts one batch: looked rows were taken from the matched set, replayed of them were
// replayed. Errors: a batch that counts more than it looked at, or more than remain.
func (p Progress) Add(looked, replayed int64) (Progress, error) {
	if replayed < 0 || replayed > looked || p.Replayed+p.Skipped+looked > p.Matched {
		return p, fmt.Errorf("replay batch counts %d of %d rows with %d of %d left", replayed, looked,
			p.Matched-p.Replayed-p.Skipped, p.Matched)
	}
	p.Replayed += replayed
	p.Skipped += looked - replayed
	return p, nil
}
