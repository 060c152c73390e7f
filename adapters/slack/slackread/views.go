package slackread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
)

var _ slackmirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the message
// exactly as this API shows it.
type Views struct{}

func (Views) Message(m slackmodel.MessageView) any { return toMessageJSON(m) }
func (Views) Channel(c slackmodel.Channel) any     { return toChannelJSON(c) }
