package slackmirror

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

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
func personArgs(workspaces []int64, scope erasure.Scope) pgx.NamedArgs {
	args := sqlkit.PersonIDArgs(workspaces, scope)
	var alts []string
	for _, id := range args["ids"].([]string) {
		alts = append(alts, regexp.QuoteMeta(id))
	}
	args["mention_re"] = `(?!)`
	if len(alts) > 0 {
		args["mention_re"] = `<@(` + strings.Join(alts, "|") + `)(\|[^>]*)?>`
	}
	return args
}

// Provider implements ports.PersonDataStore.
func (s *Store) Provider() provider.Provider { return slack.Provider }

// CountPerson implements ports.PersonDataStore.
func (s *Store) CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return 0, err
	}
	return sqlkit.CountPerson(ctx, ptx, slackPersonData, personArgs(workspaces, scope))
}

// ErasePerson implements ports.PersonDataStore.
func (s *Store) ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return 0, err
	}
	n, err := sqlkit.ErasePerson(ctx, ptx, slackPersonData, personArgs(workspaces, scope))
	if err != nil {
		return 0, fmt.Errorf("erase slack person data: %w", err)
	}
	return n, nil
}
