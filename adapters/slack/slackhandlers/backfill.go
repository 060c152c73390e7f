package slackhandlers

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// HistoryWriter is what a backfill page of channel history writes through: the same consent
// check and message methods the message handlers use.
type HistoryWriter interface {
	ChannelConsent(ctx context.Context, tx ports.Tx, ws int64, channelID string) (slackmodel.Channel, bool, error)
	InsertMessage(ctx context.Context, tx ports.Tx, ws int64, m slackmodel.Message) (bool, error)
	EditMessageText(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.MessageEdit) error
	EditMessageTimestamp(ctx context.Context, tx ports.Tx, ws int64, e slackmodel.MessageEdit) error
}

// HistoryPage is one page of a channel's history (conversations.history) or of one thread's
// replies (conversations.replies) as the mirror stores it: the messages the handlers would
// store (the same subtypes and converter), the page's next cursor ("": the last page), and, for
// a history page, the threads it lists.
type HistoryPage struct {
	channel  string
	messages []slackmodel.Message
	edits    []slackmodel.MessageEdit
	// Threads are the ts of the page's thread parents that have replies, in page order (a
	// history page only; a deleted parent, which history lists as a tombstone, included).
	Threads []string
	Next    string
}

// Items is how many messages the page writes.
func (p HistoryPage) Items() int { return len(p.messages) }

// historyAnswer is the shape of conversations.history and conversations.replies answers.
type historyAnswer struct {
	Messages         []message `json:"messages"`
	HasMore          bool      `json:"has_more"`
	ResponseMetadata struct {
		NextCursor string `json:"next_cursor"`
	} `json:"response_metadata"`
}

// DecodeHistory reads a conversations.history answer of channel in team's workspace. A message
// without a valid ts, or an answer that does not decode, is an error (the page is unreadable);
// join notices and other subtypes the handlers do not mirror are left out.
func DecodeHistory(team, channel string, body json.RawMessage) (HistoryPage, error) {
	return decodePage(team, channel, "", body)
}

// DecodeReplies reads a conversations.replies answer of the thread whose parent is parent. Slack
// repeats the parent first on every page; it is left out (its history page wrote it). Replies
// keep their thread_ts (the parent's, when Slack left it out). Errors as DecodeHistory's.
func DecodeReplies(team, channel, parent string, body json.RawMessage) (HistoryPage, error) {
	if !validTS(parent) {
		return HistoryPage{}, errors.New("a thread parent without a valid ts")
	}
	return decodePage(team, channel, parent, body)
}

// decodePage reads a history page (parent "") or a replies page of parent's thread.
func decodePage(team, channel, parent string, body json.RawMessage) (HistoryPage, error) {
	var answer historyAnswer
	if err := json.Unmarshal(body, &answer); err != nil {
		return HistoryPage{}, err
	}
	p := HistoryPage{channel: channel, Next: answer.ResponseMetadata.NextCursor}
	if answer.HasMore && p.Next == "" {
		return HistoryPage{}, errors.New("has_more without a next cursor")
	}
	for _, m := range answer.Messages {
		if parent != "" && m.TS == parent {
			continue
		}
		if !validTS(m.TS) {
			return HistoryPage{}, errors.New("a message without a valid ts")
		}
		if parent == "" && m.threadParent() {
			p.Threads = append(p.Threads, m.TS)
		}
		if !storedSubtypes[m.Subtype] {
			continue
		}
		if parent != "" && m.ThreadTS == "" {
			m.ThreadTS = parent
		}
		// Sync writes carry no event (event id 0).
		p.messages = append(p.messages, m.channelMessage(team, channel, 0))
		if m.Edited != nil && validTS(m.Edited.TS) {
			p.edits = append(p.edits, slackmodel.MessageEdit{ChannelID: channel, TS: m.TS, Text: m.Text, EditedTS: m.Edited.TS})
		}
	}
	return p, nil
}

// Lock takes the channel's registry row lock the page's writes hold (the shared lock of the
// consent check), first in the page's transaction (ports.SyncPage.Lock): a consent change locks
// that row before its trigger restarts the channel's sync job, so a page that locked its job
// first and then waited for the row could deadlock with it. Taken before the job, every writer
// of both rows locks the registry row first.
func (p HistoryPage) Lock(ctx context.Context, tx ports.Tx, store HistoryWriter, ws int64) error {
	_, _, err := store.ChannelConsent(ctx, tx, ws, p.channel)
	return err
}

// Write stores the page in tx under the message handlers' rules: only while the channel's
// registry row has consent (read with the same shared lock held to commit, so a revoke cannot
// commit between the check and the writes), each message inserted on its natural key (an
// existing message or tombstone stays as it is, so a message a webhook deleted is not stored
// again), and an edited message's text versioned by its edit timestamp, so a newer edit a
// webhook already stored is never replaced by an older page. A channel without consent writes
// nothing.
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
