// Package slackmodel is the Slack provider's model: the channel registry and its consent states
// (with the rule of their transitions, ConsentState.Next), messages, mentor turns and the team's
// connection as the handlers write them, the views the read API and the change feed show, and
// the mirror store and notifier interfaces the handlers use (Store, Notifier). The mirror store
// (slackmirror), the read API (slackread) and the Web API client (webapi) import this package,
// not the handlers (slackhandlers).
package slackmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ConsentState is a channel's consent to be mirrored. Messages are stored only while it is
// Granted.
type ConsentState struct{ s string }

var (
	// ConsentPending: the channel is known (created) but the app was not added to it.
	ConsentPending = ConsentState{"PENDING"}
	// ConsentGranted: the app was added to the channel; its messages are mirrored.
	ConsentGranted = ConsentState{"GRANTED"}
	// ConsentPaused: the channel is archived; nothing new is mirrored, nothing is erased.
	ConsentPaused = ConsentState{"PAUSED"}
	// ConsentRevoked: the channel was deleted or the app removed from it; its messages are
	// erased with the revoke and nothing is mirrored again until the app is added back.
	ConsentRevoked = ConsentState{"REVOKED"}
)

// ParseConsentState reads a consent state as stored.
func ParseConsentState(s string) (ConsentState, error) {
	for _, c := range []ConsentState{ConsentPending, ConsentGranted, ConsentPaused, ConsentRevoked} {
		if c.s == s {
			return c, nil
		}
	}
	return ConsentState{}, fmt.Errorf("unknown channel consent state %q", s)
}

func (c ConsentState) String() string { return c.s }
func (c ConsentState) IsZero() bool   { return c.s == "" }

// StoresMessages reports whether a channel in this state has its messages mirrored.
func (c ConsentState) StoresMessages() bool { return c == ConsentGranted }

// ChannelAction is a lifecycle change of the channel registry, recorded in the audit.
type ChannelAction string

const (
	ActionRegister ChannelAction = "register"
	ActionGrant    ChannelAction = "grant"
	ActionPause    ChannelAction = "pause"
	ActionResume   ChannelAction = "resume"
	ActionRevoke   ChannelAction = "revoke"
	ActionRename   ChannelAction = "rename"
)

// Next is the consent state after action from c (c zero: the channel is not registered), and
// whether anything changes. Registration never lowers a state it finds; a grant (the app was
// added) consents again even after a revoke; pause and resume move only between Granted and
// Paused; a revoke ends every state.
func (c ConsentState) Next(a ChannelAction) (ConsentState, bool) {
	switch a {
	case ActionRegister:
		if c.IsZero() {
			return ConsentPending, true
		}
	case ActionGrant:
		if c != ConsentGranted {
			return ConsentGranted, true
		}
	case ActionPause:
		if c == ConsentGranted {
			return ConsentPaused, true
		}
	case ActionResume:
		if c == ConsentPaused {
			return ConsentGranted, true
		}
	case ActionRevoke:
		if c != ConsentRevoked && !c.IsZero() {
			return ConsentRevoked, true
		}
	}
	return c, false
}

// Channel is a channel's registry row.
type Channel struct {
	TeamID  string
	ID      string
	Name    string
	Consent ConsentState
}

// ChannelAudit is one registry change, written in the step that made it.
type ChannelAudit struct {
	TeamID    string
	ChannelID string
	Action    ChannelAction
	Consent   ConsentState
	EventID   int64
}

// Message is a channel message.
type Message struct {
	TeamID    string
	ChannelID string
	TS        string
	ThreadTS  string
	UserID    string
	Text      string
	PostedAt  *time.Time
	EventID   int64
}

// MessageEdit is an edit of a channel message: its new text and the edit's timestamp, which
// versions the text.
type MessageEdit struct {
	ChannelID string
	TS        string
	Text      string
	EditedTS  string
	EventID   int64
}

// MessageDelete is a deletion of a channel message (message_deleted), which keeps a tombstone
// of the message's natural key: no text, no user.
type MessageDelete struct {
	TeamID    string
	ChannelID string
	TS        string
	PostedAt  *time.Time // the time TS stands for
	EventID   int64
}

// Turn is a mentor conversation turn submitted by a direct message. RequestID is its natural
// idempotency key (client_msg_id, else the message ts); it is stored, never put in a step name.
type Turn struct {
	TeamID    string
	RequestID string
	ChannelID string
	UserID    string
	TS        string
	ThreadTS  string
	Text      string
	EventID   int64
}

// TurnEdit is an edit of a submitted turn.
type TurnEdit struct {
	TeamID    string
	RequestID string
	Text      string
	EditedTS  string
	EventID   int64
}

// SessionStop ends the open turns of a direct-message conversation (ThreadTS "": all of it).
type SessionStop struct {
	TeamID    string
	ChannelID string
	ThreadTS  string
	EventID   int64
}

// TeamConnection is a workspace's SLACK connection of a team, as its lifecycle lock read it.
type TeamConnection struct {
	ID    int64
	State connection.State
}

// The mirror store's ports, shaped by the handlers. Every write takes the opaque ports.Tx of the
// step that claims it, so it commits with the step row or not at all.

// ChannelStore keeps the channel registry and its audit.
type ChannelStore interface {
	// ChannelConsent reads the channel's registry row with a shared lock held to commit, so a
	// registry change cannot commit between this consent check and the message write.
	// false: the channel is not registered.
	ChannelConsent(ctx context.Context, tx ports.Tx, ws int64, channelID string) (Channel, bool, error)
	// LockChannel reads the channel's registry row FOR UPDATE, for a registry change.
	LockChannel(ctx context.Context, tx ports.Tx, ws int64, channelID string) (Channel, bool, error)
	// SaveChannel inserts or updates the registry row.
	SaveChannel(ctx context.Context, tx ports.Tx, ws int64, c Channel, eventID int64) error
	// AppendAudit records a registry change.
	AppendAudit(ctx context.Context, tx ports.Tx, ws int64, a ChannelAudit) error
}

// MessageStore keeps channel messages.
type MessageStore interface {
	// InsertMessage stores a message on its natural key (channel, ts); an existing message or
	// tombstone stays as it is. It reports whether a row was added.
	InsertMessage(ctx context.Context, tx ports.Tx, ws int64, m Message) (bool, error)
	// EditMessageText replaces the text when the edit is newer than the stored text's version.
	EditMessageText(ctx context.Context, tx ports.Tx, ws int64, e MessageEdit) error
	// EditMessageTimestamp advances the stored edit timestamp to the edit's, never back.
	EditMessageTimestamp(ctx context.Context, tx ports.Tx, ws int64, e MessageEdit) error
	// DeleteMessage turns a stored message into a tombstone without text.
	DeleteMessage(ctx context.Context, tx ports.Tx, ws int64, channelID, ts string, eventID int64) error
	// TombstoneMessage is DeleteMessage that also stores the tombstone of a message the mirror
	// never had, so a backfill page read before the deletion cannot store the message later
	// (the natural-key insert keeps a tombstone). Called only under the channel's consent.
	TombstoneMessage(ctx context.Context, tx ports.Tx, ws int64, d MessageDelete) error
	// EraseChannelMessages deletes every stored message of the channel.
	EraseChannelMessages(ctx context.Context, tx ports.Tx, ws int64, channelID string) (int64, error)
}

// ConnectionStore changes the workspace's SLACK connections of a team and erases the team's
// Slack data.
type ConnectionStore interface {
	// LockTeamConnections reads the workspace's SLACK connections of team under their lifecycle
	// lock (FOR UPDATE), in id order.
	LockTeamConnections(ctx context.Context, tx ports.Tx, ws int64, teamID string) ([]TeamConnection, error)
	// TeamConnectionActive re-reads, under a shared lock held to commit, whether the workspace
	// has an ACTIVE SLACK connection of team, so no suspension commits before the write does.
	TeamConnectionActive(ctx context.Context, tx ports.Tx, ws int64, teamID string) (bool, error)
	// SetConnectionState stores the state the domain decided for a locked connection.
	SetConnectionState(ctx context.Context, tx ports.Tx, ws, connectionID int64, s connection.State) error
	// EraseTeam deletes the workspace's Slack data of team: channel registry, messages and
	// mentor turns (the audit keeps no message content and stays). The registry rows go first,
	// so the erase takes the locks in the order of every message writer (registry row, then
	// messages, then the sync jobs its connection transition changes).
	EraseTeam(ctx context.Context, tx ports.Tx, ws int64, teamID string) error
}

// MentorStore keeps mentor turns.
type MentorStore interface {
	// SubmitTurn stores a turn on its request id; a second submission of it adds nothing.
	SubmitTurn(ctx context.Context, tx ports.Tx, ws int64, t Turn) (bool, error)
	// EditTurn replaces an open turn's text when the edit is newer.
	EditTurn(ctx context.Context, tx ports.Tx, ws int64, e TurnEdit) error
	// DeleteTurn marks the turn deleted and drops its text.
	DeleteTurn(ctx context.Context, tx ports.Tx, ws int64, teamID, requestID string, eventID int64) error
	// StopSession marks the conversation's open turns stopped and reports how many.
	StopSession(ctx context.Context, tx ports.Tx, ws int64, s SessionStop) (int64, error)
}

// HomeSummary is what App Home shows a user.
type HomeSummary struct {
	MirroredChannels int
	OpenTurns        int
}

// Reader reads the mirror outside any transaction.
type Reader interface {
	// Channel reads a channel's registry row; false: not registered.
	Channel(ctx context.Context, ws int64, channelID string) (Channel, bool, error)
	// Home summarises the team's mirror for a user's App Home.
	Home(ctx context.Context, ws int64, teamID, userID string) (HomeSummary, error)
}

// Store is the whole Slack mirror store.
type Store interface {
	ChannelStore
	MessageStore
	ConnectionStore
	MentorStore
	Reader
}

// Notifier is the Slack Web API as the handlers use it (adapters/slack/webapi). Its calls are
// external effects: they run outside every write transaction, and a process that stops after
// one and before the delivery is completed repeats it on the retry. Errors:
// *inbox.ProviderError (transport failures and rate limits retried without budget).
type Notifier interface {
	// PostEphemeral shows text to one user in a channel (chat.postEphemeral), with the bot
	// token of the workspace's connection of the team.
	PostEphemeral(ctx context.Context, workspaceID int64, teamID, channelID, userID, text string) error
	// PublishHome publishes a user's App Home view (views.publish), with the same token.
	PublishHome(ctx context.Context, workspaceID int64, teamID, userID string, view json.RawMessage) error
}

// MessageView is a mirrored channel message as the read API lists it (EditedTS "": never
// edited).
type MessageView struct {
	Message
	EditedTS string
}
