package slackmirror

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Publishing to the change feed. Each message write publishes only when it changed the row,
// in its own transaction (the handler's step): an insert that inserted
// (slack.message.posted), the last step of an edit, the edit timestamp, when it moved forward
// (slack.message.edited, with the edited text), and a delete of a message that was not deleted
// yet (slack.message.deleted). A retry, replay or older edit changes nothing and publishes
// nothing.

// The change types this store publishes.
var (
	MessagePosted  = change.MustType("slack.message.posted")
	MessageEdited  = change.MustType("slack.message.edited")
	MessageDeleted = change.MustType("slack.message.deleted")
)

// Views shapes mirrored rows as the read API shows them (slackread.Views).
type Views interface {
	Message(slackmodel.MessageView) any
	ChannelViews
}

// PublishChanges makes the store publish its changes through pub, shaped by views. Call it
// once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	return s.feed.Set("slack", pub, views)
}

// removeMessageChanges removes the data of the feed's message changes of channels (their
// messages were erased: consent revoked, the app uninstalled), so the feed keeps no copy of
// what the mirror no longer has.
func (s *Store) removeMessageChanges(ctx context.Context, tx ports.Tx, ws int64, channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	sel := ports.ChangeSelection{TypePrefix: "slack.message."}
	for _, c := range channels {
		sel.SubjectPrefixes = append(sel.SubjectPrefixes, "slack:message:"+c+":")
	}
	_, err := s.feed.Remove(ctx, tx, ws, sel)
	return err
}

// messageVersion is the version of the message row alias: its writes' rule is "a live message
// only moves to a strictly newer edit timestamp, and a deletion is final", so the version is
// whether it is deleted ("1" after "0"), then its edit timestamp (its ts before any edit), the
// Slack timestamp's seconds and microseconds in fixed width.
func messageVersion(alias string) string {
	stamp := "coalesce(" + alias + ".edited_ts, " + alias + ".ts)"
	return "(CASE WHEN " + alias + ".deleted THEN '1/' ELSE '0/' END || lpad(split_part(" + stamp + ", '.', 1), 12, '0') || '.' || rpad(split_part(" +
		stamp + ", '.', 2), 6, '0'))"
}

var (
	// readMessageView is the read API's list row for one message, and its version.
	readMessageView = `
SELECT team_id, channel_id, ts, coalesce(thread_ts, ''), coalesce(user_id, ''), text, posted_at,
       coalesce(edited_ts, ''), source_event_id, ` + messageVersion("slack_message") + `
FROM slack_message WHERE workspace_id = $1 AND channel_id = $2 AND ts = $3`

	// deleteMessageReportingChange is deleteMessage telling whether the message was live, and
	// its version.
	deleteMessageReportingChange = `
WITH prior AS (SELECT deleted FROM slack_message WHERE workspace_id = $1 AND channel_id = $2 AND ts = $3)` +
		deleteMessage + `
RETURNING NOT (SELECT deleted FROM prior), ` + messageVersion("slack_message")
)

func subjectOf(channelID, ts string) string { return "slack:message:" + channelID + ":" + ts }

// publishMessage publishes the message as the read API shows it now (in tx).
func (s *Store) publishMessage(ctx context.Context, tx ports.Tx, ws int64, t change.Type, channelID, ts string) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	var (
		m       slackmodel.MessageView
		version string
	)
	err = ptx.QueryRow(ctx, readMessageView, ws, channelID, ts).Scan(&m.TeamID, &m.ChannelID, &m.TS, &m.ThreadTS,
		&m.UserID, &m.Text, &m.PostedAt, &m.EditedTS, &m.EventID, &version)
	if err != nil {
		return sqlkit.Interpret("read slack message", err)
	}
	return s.feed.Publish(ctx, tx, ws, t, subjectOf(channelID, ts), version, s.feed.Views().Message(m))
}

// tombstoneMessageReportingChange is tombstoneMessage telling whether the message was live (a
// tombstone of a message never mirrored publishes nothing: the feed never posted it).
var tombstoneMessageReportingChange = `
WITH prior AS (SELECT deleted FROM slack_message WHERE workspace_id = $1 AND channel_id = $3 AND ts = $4)` +
	tombstoneMessage + `
RETURNING NOT coalesce((SELECT deleted FROM prior), true), ` + messageVersion("m")

func (s *Store) tombstoneMessagePublishing(ctx context.Context, tx ports.Tx, ws int64, d slackmodel.MessageDelete, args []any) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	var (
		wasLive bool
		version string
	)
	if err := ptx.QueryRow(ctx, tombstoneMessageReportingChange, args...).Scan(&wasLive, &version); err != nil {
		return sqlkit.Interpret("tombstone slack message", err)
	}
	if !wasLive {
		return nil
	}
	return s.feed.Publish(ctx, tx, ws, MessageDeleted, subjectOf(d.ChannelID, d.TS), version, map[string]string{"channelId": d.ChannelID, "ts": d.TS})
}

func (s *Store) deleteMessagePublishing(ctx context.Context, tx ports.Tx, ws int64, channelID, ts string, eventID int64) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	rows, err := ptx.Query(ctx, deleteMessageReportingChange, ws, channelID, ts, eventID)
	if err != nil {
		return sqlkit.Interpret("delete slack message", err)
	}
	var (
		wasLive bool
		version string
	)
	for rows.Next() {
		var live *bool
		if err := rows.Scan(&live, &version); err != nil {
			rows.Close()
			return sqlkit.Interpret("delete slack message", err)
		}
		wasLive = live != nil && *live
	}
	if err := rows.Err(); err != nil {
		return sqlkit.Interpret("delete slack message", err)
	}
	if !wasLive {
		return nil
	}
	return s.feed.Publish(ctx, tx, ws, MessageDeleted, subjectOf(channelID, ts), version, map[string]string{"channelId": channelID, "ts": ts})
}

// Publishing the channel registry to the change feed, as the messages are (above): a
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
