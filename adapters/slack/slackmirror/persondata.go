package slackmirror

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.PersonDataStore = (*Store)(nil)

// slackPersonData is the Slack mirror's personal-data map: everything the person wrote is
// theirs alone (channel messages, mentor DMs), so it is deleted; the channel registry and its
// audit name no person. Parameters: @workspaces (bigint[]), @ids the person's Slack member ids
// (text[], matched exactly).
var slackPersonData = []pgutil.PersonRule{
	{Table: "slack_message", Where: `user_id = ANY(@ids)`},
	{Table: "slack_mentor_turn", Where: `user_id = ANY(@ids)`},
}

// Provider implements ports.PersonDataStore.
func (s *Store) Provider() provider.Provider { return slack.Provider }

// CountPerson implements ports.PersonDataStore.
func (s *Store) CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return 0, err
	}
	return pgutil.CountPerson(ctx, ptx, slackPersonData, pgutil.PersonIDArgs(workspaces, scope))
}

// ErasePerson implements ports.PersonDataStore.
func (s *Store) ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return 0, err
	}
	n, err := pgutil.ErasePerson(ctx, ptx, slackPersonData, pgutil.PersonIDArgs(workspaces, scope))
	if err != nil {
		return 0, fmt.Errorf("erase slack person data: %w", err)
	}
	return n, nil
}
