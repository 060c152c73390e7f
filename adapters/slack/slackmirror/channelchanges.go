package slackmirror

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Publishing the channel registry to the change feed, as the messages are (changes.go): a
// channel save publishes slack.channel.upserted (the channel as the read API lists it) only
// when it changed the row in anything but the event id (a registration, a rename, a consent
// change); an erasure of a channel's messages publishes one slack.channel.messages_erased with
// their count; the uninstall's erasure of a team publishes slack.channel.deleted per channel.
// Nothing is published for a write that changed nothing.

// The channel change types.
var (
	ChannelUpserted       = change.MustType("slack.channel.upserted")
	ChannelMessagesErased = change.MustType("slack.channel.messages_erased")
	ChannelDeleted        = change.MustType("slack.channel.deleted")
)

// ChannelViews shapes a channel as the read API lists it (slackread.Views).
type ChannelViews interface {
	Channel(slackmodel.Channel) any
}

const (
	saveChannelReportingChange = `
WITH prior AS (SELECT * FROM slack_channel WHERE workspace_id = $1 AND id = $3)` + saveChannel + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id')`

	readChannelView = `SELECT team_id, id, name, consent_state FROM slack_channel WHERE workspace_id = $1 AND id = $2`

	eraseTeamChannelsReporting = eraseTeamChannels + ` RETURNING id`
)

func channelSubject(id string) string { return "slack:channel:" + id }

func (s *Store) publishChannel(ctx context.Context, tx ports.Tx, ws int64, t change.Type, channelID string, data any) error {
	return s.feed.PublishUnversioned(ctx, tx, ws, t, channelSubject(channelID), data)
}

func (s *Store) saveChannelPublishing(ctx context.Context, tx ports.Tx, ws int64, c slackmodel.Channel, eventID int64) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	var changed bool
	err = ptx.QueryRow(ctx, saveChannelReportingChange, ws, c.TeamID, c.ID, c.Name, c.Consent.String(), eventID).Scan(&changed)
	if err != nil || !changed {
		return sqlkit.Interpret("save slack channel", err)
	}
	saved, ok, err := scanChannel(ctx, ptx, "read slack channel", readChannelView, ws, c.ID)
	if err != nil || !ok {
		return err
	}
	return s.publishChannel(ctx, tx, ws, ChannelUpserted, c.ID, s.channels().Channel(saved))
}

func (s *Store) eraseChannelMessagesPublishing(ctx context.Context, tx ports.Tx, ws int64, channelID string) (int64, error) {
	n, err := exec(ctx, tx, "erase slack channel messages", eraseChannelMessages, ws, channelID)
	if err != nil || n == 0 {
		return n, err
	}
	if err := s.removeMessageChanges(ctx, tx, ws, []string{channelID}); err != nil {
		return 0, err
	}
	return n, s.publishChannel(ctx, tx, ws, ChannelMessagesErased, channelID, map[string]any{"id": channelID, "messages": n})
}

func (s *Store) eraseTeamChannelsPublishing(ctx context.Context, tx ports.Tx, ws int64, teamID string) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	rows, _ := ptx.Query(ctx, eraseTeamChannelsReporting, ws, teamID)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return sqlkit.Interpret("erase slack team channels", err)
	}
	for _, id := range ids {
		if err := s.publishChannel(ctx, tx, ws, ChannelDeleted, id, map[string]string{"id": id, "teamId": teamID}); err != nil {
			return err
		}
	}
	return nil
}

// channels is the views' channel shaping.
func (s *Store) channels() ChannelViews { return s.feed.Views() }
