package slackmirror

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// slackPersonData is the Slack mirror's personal-data map: everything the person wrote is
// theirs alone (channel messages, mentor DMs), so it is deleted; the channel registry and its
// audit name no person. Parameters: @workspaces (bigint[]), @ids the person's Slack member ids
// (text[], matched exactly).
var slackPersonData = []sqlkit.PersonRule{
	{Table: "slack_message", Where: `user_id = ANY(@ids)`},
	{Table: "slack_mentor_turn", Where: `user_id = ANY(@ids)`},
	// A mention of the person in someone else's message ("<@U024BE7LH>", with or without
	// "|name") becomes a mention of TombstoneMember; the message stays.
	{Table: "slack_message", Where: `text ~ @mention_re`, Set: `text = regexp_replace(text, @mention_re, '<@` + TombstoneMember + `>', 'g')`},
}

// TombstoneMember is the member id that replaces the person's in mentions: no Slack member has
// it (member ids are U or W and base-32 digits, never all zero).
const TombstoneMember = "U00000000"

// personArgs are PersonIDArgs and @mention_re, the person's mentions in message text.
var personArgs = mirrorkit.IDArgs(false, map[string]func(string) string{
	"mention_re": func(ids string) string { return `<@` + ids + `(\|[^>]*)?>` },
})
