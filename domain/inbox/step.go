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
	// A Slack message timestamp ("1355517523.000005") identifies a message.
	slackMessageTS = regexp.MustCompile(`^[0-9]{9,}\.[0-9]{6}$`)
	// Slack direct-message (D…) and group-DM (G…/mpdm) channel ids identify a conversation.
	slackDMChannel = regexp.MustCompile(`^(D|G)[A-Z0-9]{6,}$|^mpdm-`)
)

// ErrInvalidStepName is returned for any name the rules refuse.
var ErrInvalidStepName = errors.New("invalid step name")

// Step is the name of one idempotent database step of a handler: a fixed operation name
// ("issue.upsert") for a single-step event, or an operation plus stable item ids in a loop
// ("push.commit", "1296269", "6dcb09b5…"), never the loop position. A step name holds no person
// data: never a message identifier or a direct-message channel identifier.
type Step struct{ name string }

// NewStep validates an operation and its stable item ids and joins them with '/'.
func NewStep(operation string, items ...string) (Step, error) {
	if len(operation) > maxStepOperation || !stepOperation.MatchString(operation) {
		return Step{}, fmt.Errorf("%w: operation %q must be a lower-case dotted name of at most %d bytes",
			ErrInvalidStepName, operation, maxStepOperation)
	}
	for _, it := range items {
		if len(it) > maxStepItem || !stepItem.MatchString(it) {
			return Step{}, fmt.Errorf("%w: item %q must be a stable id of at most %d bytes without separators",
				ErrInvalidStepName, it, maxStepItem)
		}
		if slackMessageTS.MatchString(it) {
			return Step{}, fmt.Errorf("%w: item looks like a message timestamp; name the operation instead", ErrInvalidStepName)
		}
		if slackDMChannel.MatchString(it) {
			return Step{}, fmt.Errorf("%w: item looks like a direct-message channel id", ErrInvalidStepName)
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

func (s Step) String() string { return s.name }
func (s Step) IsZero() bool   { return s.name == "" }
