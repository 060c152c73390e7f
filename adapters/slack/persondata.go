package slack

import "github.com/hephaestus-dev/hephaestus/ports/contract"

// PersonFields declares where Slack payloads name a person, for person erasure of the inbox
// stores: the member id ("U024BE7LH") in "user" (messages, reactions, member_joined_channel,
// app_home_opened) and "user_id" (slash commands, interactivity). Slack member ids are matched
// exactly; Slack has no login in its events.
func PersonFields() contract.PersonFields {
	return contract.PersonFields{
		Provider:   Provider,
		References: []string{"user", "user_id"},
		Text: []contract.TextRewrite{
			// A mention "<@U024BE7LH>" or "<@U024BE7LH|name>" in someone else's message.
			{Pattern: `<@(?:{ids})(\|[^>]*)?>`, Replacement: `<@U00000000>`},
		},
	}
}
