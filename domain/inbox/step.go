package inbox

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Step names are stored in provider_event_step and must stay stable across releases while
// their events can still be in the inbox: a renamed step would run again on retry or replay.
const (
	maxStepOperation = 64
	maxStepItem      = 96
	maxStepName      = 240
)

var (
	stepOperation = regexp.MustCompile(`^[a-z][a-z0-9]*([._-][a-z0-9]+)*$`)
	stepItem      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]*$`)
)

// ErrInvalidStepName is returned for any name the rules refuse.
var ErrInvalidStepName = errors.New("invalid step name")

// Step is the name of one idempotent database step of a handler: a fixed operation name
// ("issue.upsert") for a single-step event, or an operation plus stable item ids in a loop
// ("push.commit", "1296269", "6dcb09b5…"), never the loop position. A step name holds no person
// data: never a message identifier or a direct-message channel identifier.
type Step struct{ name string }

// PersonalItem reports whether a step item is an identifier that names a person's message or a
// private conversation, by the rules of the provider whose ids the item is (each provider
// declares its own; see NewStepOf).
type PersonalItem func(item string) bool

// NewStep validates an operation and its stable item ids and joins them with '/'.
func NewStep(operation string, items ...string) (Step, error) {
	return NewStepOf(nil, operation, items...)
}

// NewStepOf is NewStep for a provider whose ids can name a person: an item personal reports
// is refused, so a step name never holds person data. personal may be nil.
func NewStepOf(personal PersonalItem, operation string, items ...string) (Step, error) {
	if len(operation) > maxStepOperation || !stepOperation.MatchString(operation) {
		return Step{}, fmt.Errorf("%w: operation %q must be a lower-case dotted name of at most %d bytes",
			ErrInvalidStepName, operation, maxStepOperation)
	}
	for _, it := range items {
		if len(it) > maxStepItem || !stepItem.MatchString(it) {
			return Step{}, fmt.Errorf("%w: item %q must be a stable id of at most %d bytes without separators",
				ErrInvalidStepName, it, maxStepItem)
		}
		if personal != nil && personal(it) {
			return Step{}, fmt.Errorf("%w: item looks like a message or conversation id; name the operation instead", ErrInvalidStepName)
		}
	}
	name := strings.Join(append([]string{operation}, items...), "/")
	if len(name) > maxStepName {
		return Step{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidStepName, maxStepName)
	}
	return Step{name: name}, nil
}

// MustStep is NewStep for fixed names known at compile time; it panics on a bad name, which a
// test of the handler catches.
func MustStep(operation string, items ...string) Step {
	s, err := NewStep(operation, items...)
	if err != nil {
		panic(err)
	}
	return s
}

// RestoreStep rebuilds a step name read from storage.
func RestoreStep(name string) Step { return Step{name: name} }

// String is the step's stable name, stored in provider_event_step.
func (s Step) String() string { return s.name }

// IsZero reports whether s is the zero Step.
func (s Step) IsZero() bool { return s.name == "" }
