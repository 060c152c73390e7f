package slackhandlers

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
)

// callback is the Events API envelope around one event.
type callback struct {
	TeamID         string `json:"team_id"`
	Authorizations []struct {
		UserID string `json:"user_id"`
		IsBot  bool   `json:"is_bot"`
	} `json:"authorizations"`
}

// isAppBot reports whether user is the app's bot user in this delivery (Slack names it in the
// envelope's authorizations).
func (c callback) isAppBot(user string) bool {
	for _, a := range c.Authorizations {
		if a.IsBot && a.UserID != "" && a.UserID == user {
			return true
		}
	}
	return false
}

// channelRef is an event's channel, written as an id or as an object with an id and a name.
type channelRef struct {
	ID   string
	Name string
}

func (c *channelRef) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*c = channelRef{}
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		return json.Unmarshal(b, &c.ID)
	}
	var o struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*c = channelRef{ID: o.ID, Name: o.Name}
	return nil
}

// message is a message event, or the message inside message_changed / message_deleted.
type message struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	Channel     string `json:"channel"`
	ChannelType string `json:"channel_type"`
	User        string `json:"user"`
	BotID       string `json:"bot_id"`
	Text        string `json:"text"`
	TS          string `json:"ts"`
	ThreadTS    string `json:"thread_ts"`
	ReplyCount  int    `json:"reply_count"`
	ClientMsgID string `json:"client_msg_id"`
	DeletedTS   string `json:"deleted_ts"`
	EventTS     string `json:"event_ts"`
	Edited      *struct {
		User string `json:"user"`
		TS   string `json:"ts"`
	} `json:"edited"`
	Message         *message `json:"message"`
	PreviousMessage *message `json:"previous_message"`
}

// channelMessage is the mirror's row of a channel message of team's channel, written by the
// message handlers and the backfill alike (a thread reply keeps its thread_ts).
func (m message) channelMessage(team, channel string, eventID int64) slackmodel.Message {
	return slackmodel.Message{
		TeamID: team, ChannelID: channel, TS: m.TS, ThreadTS: m.ThreadTS, UserID: m.User, Text: m.Text,
		PostedAt: tsTime(m.TS), EventID: eventID,
	}
}

// threadParent reports a message that starts a thread with replies (thread_ts is its own ts).
func (m message) threadParent() bool {
	return m.ReplyCount > 0 && (m.ThreadTS == "" || m.ThreadTS == m.TS)
}

// direct reports whether the message is in a one-to-one direct-message conversation.
func (m message) direct() bool {
	return m.ChannelType == "im" || strings.HasPrefix(m.Channel, "D")
}

// groupDirect reports a group direct message (mpim): neither a subscribed channel nor the
// mentor's one-to-one conversation, so nothing of it is stored.
func (m message) groupDirect() bool { return m.ChannelType == "mpim" }

// fromBot reports a message the app or another bot wrote (the mentor's own replies included).
func (m message) fromBot() bool { return m.BotID != "" || m.Subtype == "bot_message" }

// requestID is a turn's natural key: the client's message id, which Slack keeps across the
// message's edits and its deletion, else its ts.
func (m message) requestID() string {
	if m.ClientMsgID != "" {
		return m.ClientMsgID
	}
	return "ts:" + m.TS
}

// tsTime is the time a Slack ts ("1355517523.000005") stands for; nil when it is none.
func tsTime(ts string) *time.Time {
	secs, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || s <= 0 {
		return nil
	}
	var micros int64
	if frac != "" {
		if micros, err = strconv.ParseInt((frac + "000000")[:6], 10, 64); err != nil {
			return nil
		}
	}
	t := time.Unix(s, micros*1000).UTC()
	return &t
}

// validTS accepts what Slack writes as a message ts: digits, a dot, digits.
func validTS(ts string) bool {
	secs, frac, ok := strings.Cut(ts, ".")
	return ok && secs != "" && frac != "" && digits(secs) && digits(frac) && len(ts) <= 32
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
