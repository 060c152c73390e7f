package slackhandlers

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// errConnectionInactive rolls back a mentor write whose team connection is no longer ACTIVE.
// It never leaves the package: the handler completes the delivery without writing.
var errConnectionInactive = errors.New("the team's Slack connection is not active")

// mentorMessage handles a direct message to the app: a submission, an edit or a deletion of a
// mentor turn. Messages the app or another bot wrote (the mentor's replies) are not turns.
func (b base) mentorMessage(ctx context.Context, d ports.Dispatch, ws int64, team string, m message) error {
	eventID := d.Delivery.ID()
	switch m.Subtype {
	case "message_changed":
		if m.Message == nil || !validTS(m.Message.TS) {
			return malformed(EventMessage, "message_changed needs the changed message and its ts")
		}
		changed := *m.Message
		if changed.fromBot() {
			return nil
		}
		edited := m.EventTS
		if changed.Edited != nil && validTS(changed.Edited.TS) {
			edited = changed.Edited.TS
		}
		e := slackmodel.TurnEdit{TeamID: team, RequestID: changed.requestID(), Text: changed.Text, EditedTS: edited, EventID: eventID}
		return b.activeStep(ctx, ws, team, StepTurnEdit, func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.EditTurn(ctx, tx, ws, e)
		})
	case "message_deleted":
		prev := m.PreviousMessage
		if prev == nil {
			if !validTS(m.DeletedTS) {
				return malformed(EventMessage, "message_deleted needs the deleted message")
			}
			prev = &message{TS: m.DeletedTS}
		}
		if prev.fromBot() {
			return nil
		}
		request := prev.requestID()
		return b.activeStep(ctx, ws, team, StepTurnDelete, func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.DeleteTurn(ctx, tx, ws, team, request, eventID)
		})
	case "", "file_share":
	default:
		return nil
	}
	if m.fromBot() {
		return nil
	}
	if !validTS(m.TS) {
		return malformed(EventMessage, "a message needs a ts")
	}
	t := slackmodel.Turn{
		TeamID: team, RequestID: m.requestID(), ChannelID: m.Channel, UserID: m.User, TS: m.TS,
		ThreadTS: m.ThreadTS, Text: m.Text, EventID: eventID,
	}
	return b.activeStep(ctx, ws, team, StepTurnSubmit, func(ctx context.Context, tx ports.Tx) error {
		_, err := b.deps.Store.SubmitTurn(ctx, tx, ws, t)
		return err
	})
}

// sessionStopped handles the mentor's session-stopped event: the open turns of the conversation
// are stopped in a claimed step inside the active-connection transaction.
func (b base) sessionStopped(ctx context.Context, d ports.Dispatch) error {
	const event = EventSessionStopped
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		callback
		Event *struct {
			Channel         string `json:"channel"`
			ThreadTS        string `json:"thread_ts"`
			AssistantThread *struct {
				ChannelID string `json:"channel_id"`
				ThreadTS  string `json:"thread_ts"`
			} `json:"assistant_thread"`
		} `json:"event"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.Event == nil || p.TeamID == "" {
		return malformed(event, "a session-stopped event needs a team")
	}
	stop := slackmodel.SessionStop{TeamID: p.TeamID, ChannelID: p.Event.Channel, ThreadTS: p.Event.ThreadTS, EventID: d.Delivery.ID()}
	if t := p.Event.AssistantThread; t != nil {
		stop.ChannelID, stop.ThreadTS = t.ChannelID, t.ThreadTS
	}
	if stop.ChannelID == "" {
		return malformed(event, "a session-stopped event needs its conversation")
	}
	return wrap(event, b.activeStep(ctx, ws, p.TeamID, StepSessionStop, func(ctx context.Context, tx ports.Tx) error {
		_, err := b.deps.Store.StopSession(ctx, tx, ws, stop)
		return err
	}))
}

// activeStep runs fn in the claimed step s after re-reading, under a shared lock held to
// commit, that the workspace's connection of the team is ACTIVE: a suspension or uninstall
// either commits first (and the write is refused) or waits for this step. A refused write rolls
// the step back and the delivery completes without it; it is noted, without the conversation.
func (b base) activeStep(ctx context.Context, ws int64, team string, step inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	err := b.step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
		active, err := b.deps.Store.TeamConnectionActive(ctx, tx, ws, team)
		if err != nil {
			return err
		}
		if !active {
			return errConnectionInactive
		}
		return fn(ctx, tx)
	})
	if errors.Is(err, errConnectionInactive) {
		b.info("slack mentor write refused: the team's connection is not active", "workspace", ws, "step", step.String())
		return nil
	}
	return err
}
