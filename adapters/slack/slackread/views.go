package slackread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ slackmirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the message
// exactly as this API shows it.
type Views struct{}

func (Views) Message(m slackmodel.MessageView) any { return toMessageJSON(m) }
func (Views) Channel(c slackmodel.Channel) any     { return toChannelJSON(c) }

// PersonFields is Slack's person-data declaration (slack.PersonFields) with the members of
// every view this read API answers with and publishes (readkit.PersonFields). Errors: a
// malformed person tag.
func PersonFields() (contract.PersonFields, error) {
	return readkit.PersonFields(slack.PersonFields(), channelJSON{}, messageJSON{})
}
