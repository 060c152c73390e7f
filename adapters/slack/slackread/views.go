package slackread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
)

var _ slackmirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the message
// exactly as this API shows it.
type Views struct{}

func (Views) Message(m slackhandlers.MessageView) any { return toMessageJSON(m) }
func (Views) Channel(c slackhandlers.Channel) any     { return toChannelJSON(c) }
