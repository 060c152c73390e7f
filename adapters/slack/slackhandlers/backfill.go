package slackhandlers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// HistoryWriter is what a backfill page of channel history writes through: the same consent
// check and message methods the message handlers use.
type HistoryWriter interface {
	ChannelConsent(ctx context.Context, tx ports.Tx, ws int64, channelID string) (Channel, bool, error)
	InsertMessage(ctx context.Context, tx ports.Tx, ws int64, m Message) (bool, error)
	EditMessageText(ctx context.Context, tx ports.Tx, ws int64, e MessageEdit) error
	EditMessageTimestamp(ctx context.Context, tx ports.Tx, ws int64, e MessageEdit) error
}

// HistoryPage is one page of a channel's history (conversations.history) as the mirror
// stores it: the messages the handlers would store (the same subtypes), and the page's next
// cursor ("": the last page).
type HistoryPage struct {
	channel  string
	messages []Message
	edits    []MessageEdit
	Next     string
}

// Items is how many messages the page writes.
func (p HistoryPage) Items() int { return len(p.messages) }

// DecodeHistory reads a conversations.history answer of channel in team's workspace. A message
// without a valid ts, or an answer that does not decode, is an error (the page is unreadable);
// join notices and other subtypes the handlers do not mirror are left out.
func DecodeHistory(team, channel string, body json.RawMessage) (HistoryPage, error) {
	var answer struct {
		Messages         []message `json:"messages"`
		HasMore          bool      `json:"has_more"`
		ResponseMetadata struct {
			NextCursor string `json:"next_cursor"`
		} `json:"response_metadata"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return HistoryPage{}, err
	}
	p := HistoryPage{channel: channel, Next: answer.ResponseMetadata.NextCursor}
	if answer.HasMore && p.Next == "" {
		return HistoryPage{}, errors.New("has_more without a next cursor")
	}
	for _, m := range answer.Messages {
		if !storedSubtypes[m.Subtype] {
			continue
		}
		if !validTS(m.TS) {
			return HistoryPage{}, errors.New("a message without a valid ts")
		}
		p.messages = append(p.messages, Message{
			TeamID: team, ChannelID: channel, TS: m.TS, ThreadTS: m.ThreadTS, UserID: m.User, Text: m.Text,
			PostedAt: tsTime(m.TS),
		})
		if m.Edited != nil && validTS(m.Edited.TS) {
			p.edits = append(p.edits, MessageEdit{ChannelID: channel, TS: m.TS, Text: m.Text, EditedTS: m.Edited.TS})
		}
	}
	return p, nil
}

// Write stores the page in tx under the message handlers' rules: only while the channel's
// registry row has consent (read with the same shared lock held to commit, so a revoke cannot
// commit between the check and the writes), each message inserted on its natural key (an
// existing message or tombstone stays as it is), and an edited message's text versioned by its
// edit timestamp, so a newer edit a webhook already stored is never replaced by an older page.
// A channel without consent writes nothing. Sync writes carry no event (event id 0).
func (p HistoryPage) Write(ctx context.Context, tx ports.Tx, store HistoryWriter, ws int64) error {
	c, found, err := store.ChannelConsent(ctx, tx, ws, p.channel)
	if err != nil || !found || !c.Consent.StoresMessages() {
		return err
	}
	for _, m := range p.messages {
		if _, err := store.InsertMessage(ctx, tx, ws, m); err != nil {
			return err
		}
	}
	for _, e := range p.edits {
		if err := store.EditMessageText(ctx, tx, ws, e); err != nil {
			return err
		}
		if err := store.EditMessageTimestamp(ctx, tx, ws, e); err != nil {
			return err
		}
	}
	return nil
}
