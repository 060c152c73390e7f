package slackmirror

import (
	"context"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.PersonDataStore = (*Store)(nil)

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
func personArgs(_ context.Context, _ pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error) {
	args := sqlkit.PersonIDArgs(workspaces, scope)
	var alts []string
	for _, id := range args["ids"].([]string) {
		alts = append(alts, regexp.QuoteMeta(id))
	}
	args["mention_re"] = `(?!)`
	if len(alts) > 0 {
		args["mention_re"] = `<@(` + strings.Join(alts, "|") + `)(\|[^>]*)?>`
	}
	return args, nil
}

// Provider implements ports.PersonDataStore.
func (s *Store) Provider() provider.Provider { return slack.Provider }

// slackPersonErasure counts and erases slackPersonData.
var slackPersonErasure = mirrorkit.PersonData{Name: "slack", Rules: slackPersonData, Args: personArgs}

// CountPerson implements ports.PersonDataStore.
func (s *Store) CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	return slackPersonErasure.Count(ctx, tx, workspaces, scope)
}

// ErasePerson implements ports.PersonDataStore.
func (s *Store) ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	return slackPersonErasure.Erase(ctx, tx, workspaces, scope)
}
