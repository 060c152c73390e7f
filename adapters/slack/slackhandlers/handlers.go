// Package handlers mirrors subscribed Slack events into the data of the workspace whose inbox
// row is dispatched. The handlers are adapters: they decode the stored payload, decide what to
// write and in which named step, and write only through the DeliveryInbox and the store
// interfaces of this package, never through a database driver.
//
// Boundaries (the seed's "Handler boundaries" table, Slack rows):
//
//   - Channel messages: message insert ("slack.message.insert"), edit ("slack.message.insert"
//     for its base message, then "slack.message.edit.text" and "slack.message.edit.timestamp"),
//     delete ("slack.message.delete") and channel erase ("slack.channel.erase") are claimed
//     steps. An edit retry finishes its text and timestamp writes after its base insert
//     committed. Messages are stored only for channels whose registry row has consent.
//   - Channel lifecycle and member-joined: registration, grant, pause, resume, revoke and
//     rename are claimed steps that write the consent state and an audit row together. The
//     ephemeral join notice is an external effect (Notifier), sent outside every transaction.
//   - app_uninstalled and tokens_revoked: one step, "slack.connection.uninstall", takes the
//     connection's lifecycle lock, erases the team's Slack data and moves the connection to
//     UNINSTALLED, all in the uninstall transaction.
//   - Mentor direct messages and the session-stopped event: submission, edit, deletion and stop
//     are claimed steps that first re-read, under a shared lock, that the team's connection is
//     ACTIVE. The turn's request id (client_msg_id, else ts) is its natural key in the table.
//   - App Home reads the mirror and publishes the view through the Notifier; no write step.
//
// Step names are fixed operation names: never a message ts, a channel id or a direct-message
// channel id (slack.NewStep refuses the first and the last anyway). One event has at most one
// step of each name, so a fixed name identifies its step within the event.
//
// Nothing here starts a goroutine or keeps the dispatch context: the dispatch identity ends
// when Handle returns, and the external effects run on the dispatch goroutine.
package slackhandlers

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/handlerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Deps are what the handlers need.
type Deps struct {
	// Inbox runs every database write in a fenced, named step.
	Inbox ports.DeliveryInbox
	// Store is the Slack mirror store.
	Store slackmodel.Store
	// Notifier sends the join notice and publishes App Home. nil: no external effects.
	Notifier slackmodel.Notifier
	// Log receives notes that are not failures (a DM refused by an inactive connection). nil:
	// discarded. Never a message text or a channel id of a direct message.
	Log ports.Logger
}

// Event types, as the Events API names them in event.type.
const (
	EventMessage             = "message"
	EventChannelCreated      = "channel_created"
	EventChannelRename       = "channel_rename"
	EventChannelArchive      = "channel_archive"
	EventChannelUnarchive    = "channel_unarchive"
	EventChannelDeleted      = "channel_deleted"
	EventChannelLeft         = "channel_left"
	EventMemberJoinedChannel = "member_joined_channel"
	EventAppUninstalled      = "app_uninstalled"
	EventTokensRevoked       = "tokens_revoked"
	EventAppHomeOpened       = "app_home_opened"
	// EventSessionStopped is the mentor's "assistant session stopped" event: the user stopped
	// the assistant conversation of a direct message (thread).
	EventSessionStopped = "assistant_session_stopped"
)

// Register wires every Slack handler into reg. Errors: invalid deps, or the registry's refusal.
func Register(reg contract.HandlerRegistrar, deps Deps) error {
	if err := handlerkit.Needs(slack.Provider, deps.Inbox, deps.Store); err != nil {
		return err
	}
	b := base{deps: deps}
	hs := map[string]ports.Handler{
		EventMessage:             ports.HandlerFunc(b.message),
		EventChannelCreated:      b.lifecycle(slackmodel.ActionRegister),
		EventChannelRename:       b.lifecycle(slackmodel.ActionRename),
		EventChannelArchive:      b.lifecycle(slackmodel.ActionPause),
		EventChannelUnarchive:    b.lifecycle(slackmodel.ActionResume),
		EventChannelDeleted:      b.lifecycle(slackmodel.ActionRevoke),
		EventChannelLeft:         b.lifecycle(slackmodel.ActionRevoke),
		EventMemberJoinedChannel: ports.HandlerFunc(b.memberJoined),
		EventAppUninstalled:      ports.HandlerFunc(b.uninstall),
		EventTokensRevoked:       ports.HandlerFunc(b.uninstall),
		EventAppHomeOpened:       ports.HandlerFunc(b.appHome),
		EventSessionStopped:      ports.HandlerFunc(b.sessionStopped),
	}
	return handlerkit.Register(reg, slack.Provider, EventTypes(), hs)
}

// EventTypes lists the event types Register wires, in a stable order.
func EventTypes() []string {
	return []string{
		EventMessage, EventChannelCreated, EventChannelRename, EventChannelArchive, EventChannelUnarchive,
		EventChannelDeleted, EventChannelLeft, EventMemberJoinedChannel, EventAppUninstalled,
		EventTokensRevoked, EventAppHomeOpened, EventSessionStopped,
	}
}

// Fixed step names, stored in provider_event_step: keep them stable across releases while their
// events can still be in the inbox, or a retry would run a renamed step again.
var (
	StepMessageInsert        = slack.MustStep("slack.message.insert")
	StepMessageEditText      = slack.MustStep("slack.message.edit.text")
	StepMessageEditTimestamp = slack.MustStep("slack.message.edit.timestamp")
	StepMessageDelete        = slack.MustStep("slack.message.delete")
	StepChannelErase         = slack.MustStep("slack.channel.erase")
	StepConnectionUninstall  = slack.MustStep("slack.connection.uninstall")
	StepTurnSubmit           = slack.MustStep("slack.mentor.turn.submit")
	StepTurnEdit             = slack.MustStep("slack.mentor.turn.edit")
	StepTurnDelete           = slack.MustStep("slack.mentor.turn.delete")
	StepSessionStop          = slack.MustStep("slack.mentor.session.stop")

	channelSteps = map[slackmodel.ChannelAction]inbox.Step{
		slackmodel.ActionRegister: inbox.MustStep("slack.channel.register"),
		slackmodel.ActionGrant:    inbox.MustStep("slack.channel.grant"),
		slackmodel.ActionPause:    inbox.MustStep("slack.channel.pause"),
		slackmodel.ActionResume:   inbox.MustStep("slack.channel.resume"),
		slackmodel.ActionRevoke:   inbox.MustStep("slack.channel.revoke"),
		slackmodel.ActionRename:   inbox.MustStep("slack.channel.rename"),
	}
)

// base holds the dependencies every handler method shares.
type base struct{ deps Deps }

// The handlers' failures name the provider (handlerkit.Kit).
var decode, malformed, wrap, workspace = kit.Decode, kit.Malformed, kit.Wrap, kit.Workspace

const kit = handlerkit.Kit("slack")

// step runs fn as the named step. A step that committed in an earlier attempt is skipped.
func (b base) step(ctx context.Context, s inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	return handlerkit.Step(ctx, b.deps.Inbox, s, fn)
}

func (b base) info(msg string, kv ...any) {
	if b.deps.Log != nil {
		b.deps.Log.Infow(msg, kv...)
	}
}

// message routes a message event: a direct message is a mentor turn, a group direct message is
// not stored, everything else is a channel message.
func (b base) message(ctx context.Context, d ports.Dispatch) error {
	ws, err := workspace(EventMessage, d)
	if err != nil {
		return err
	}
	var p struct {
		callback
		Event *message `json:"event"`
	}
	if err := decode(EventMessage, d.Payload, &p); err != nil {
		return err
	}
	if p.Event == nil || p.Event.Channel == "" {
		return malformed(EventMessage, "a message event needs a channel")
	}
	if p.TeamID == "" {
		return malformed(EventMessage, "an event callback needs a team_id")
	}
	m := *p.Event
	switch {
	case m.groupDirect():
		return nil
	case m.direct():
		return wrap(EventMessage, b.mentorMessage(ctx, d, ws, p.TeamID, m))
	default:
		return wrap(EventMessage, b.channelMessage(ctx, d, ws, p.TeamID, m))
	}
}
