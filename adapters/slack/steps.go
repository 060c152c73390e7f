package slack

import (
	"regexp"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var (
	// A message timestamp ("1355517523.000005") identifies a person's message.
	messageTS = regexp.MustCompile(`^[0-9]{9,}\.[0-9]{6}$`)
	// Direct-message (D…) and group-DM (G…/mpdm) channel ids identify a private conversation.
	dmChannel = regexp.MustCompile(`^(D|G)[A-Z0-9]{6,}$|^mpdm-`)
)

// PersonalStepItem is Slack's rule of which step items would put person data into a step name:
// a message timestamp or a direct-message channel id (inbox.PersonalItem).
func PersonalStepItem(item string) bool {
	return messageTS.MatchString(item) || dmChannel.MatchString(item)
}

// NewStep is inbox.NewStepOf with Slack's rule: the Slack handlers name their steps with it.
func NewStep(operation string, items ...string) (inbox.Step, error) {
	return inbox.NewStepOf(PersonalStepItem, operation, items...)
}

// MustStep is NewStep for fixed names known at compile time; it panics on a bad name.
func MustStep(operation string, items ...string) inbox.Step {
	s, err := NewStep(operation, items...)
	if err != nil {
		panic(err)
	}
	return s
}
