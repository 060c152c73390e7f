package slackhandlers

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// JoinNotice is the ephemeral text a person sees when they join a mirrored channel.
const JoinNotice = "Hephaestus mirrors the messages of this channel for your workspace. " +
	"Remove the app from the channel to stop it; its mirrored messages are then erased."

type channelEvent struct {
	callback
	Event *struct {
		Type    string     `json:"type"`
		Channel channelRef `json:"channel"`
		User    string     `json:"user"`
	} `json:"event"`
}

// lifecycle handles a channel lifecycle event: one claimed step that changes the registry's
// consent state (or name) and appends the audit row in the same transaction. A revoke erases
// the channel's mirrored messages in that transaction too.
func (b base) lifecycle(action slackmodel.ChannelAction) ports.Handler {
	return ports.HandlerFunc(func(ctx context.Context, d ports.Dispatch) error {
		event := d.Delivery.EventType()
		ws, err := workspace(event, d)
		if err != nil {
			return err
		}
		var p channelEvent
		if err := decode(event, d.Payload, &p); err != nil {
			return err
		}
		if p.Event == nil || p.Event.Channel.ID == "" || p.TeamID == "" {
			return malformed(event, "a channel event needs a team and a channel")
		}
		return wrap(event, b.changeChannel(ctx, ws, p.TeamID, p.Event.Channel, action, d.Delivery.ID()))
	})
}

// changeChannel runs one registry change in its claimed step.
func (b base) changeChannel(ctx context.Context, ws int64, team string, ch channelRef, action slackmodel.ChannelAction, eventID int64) error {
	return b.step(ctx, channelSteps[action], func(ctx context.Context, tx ports.Tx) error {
		current, found, err := b.deps.Store.LockChannel(ctx, tx, ws, ch.ID)
		if err != nil {
			return err
		}
		if !found {
			if action != slackmodel.ActionRegister && action != slackmodel.ActionGrant && action != slackmodel.ActionRename {
				return nil // nothing to pause, resume or revoke in a channel never registered
			}
			current = slackmodel.Channel{TeamID: team, ID: ch.ID}
		}
		renamed := ch.Name != "" && ch.Name != current.Name
		next, changed := current.Consent.Next(action)
		if action == slackmodel.ActionRename {
			// A rename of a channel the registry never saw registers it under its new name.
			next, changed = current.Consent, renamed
			if !found {
				next = slackmodel.ConsentPending
			}
		}
		if !changed && !renamed {
			return nil
		}
		if renamed {
			current.Name = ch.Name
		}
		current.Consent = next
		if err := b.deps.Store.SaveChannel(ctx, tx, ws, current, eventID); err != nil {
			return err
		}
		if next == slackmodel.ConsentRevoked && changed {
			if _, err := b.deps.Store.EraseChannelMessages(ctx, tx, ws, ch.ID); err != nil {
				return err
			}
		}
		return b.deps.Store.AppendAudit(ctx, tx, ws, slackmodel.ChannelAudit{
			TeamID: team, ChannelID: ch.ID, Action: action, Consent: next, EventID: eventID,
		})
	})
}

// memberJoined handles member_joined_channel. When the app's own bot user joined, the channel
// is granted consent in a claimed step ("slack.channel.grant"). When a person joined a mirrored
// channel, they get the ephemeral join notice: an external effect, sent after a read and outside
// every transaction. It has no completion record of its own, so a process that stops after the
// notice and before the delivery completes sends it again on the retry; Slack's ephemeral
// messages have no idempotency key, and a repeated notice is harmless.
func (b base) memberJoined(ctx context.Context, d ports.Dispatch) error {
	const event = EventMemberJoinedChannel
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p channelEvent
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.Event == nil || p.Event.Channel.ID == "" || p.Event.User == "" || p.TeamID == "" {
		return malformed(event, "member_joined_channel needs a team, a channel and a user")
	}
	if p.isAppBot(p.Event.User) {
		return wrap(event, b.changeChannel(ctx, ws, p.TeamID, p.Event.Channel, slackmodel.ActionGrant, d.Delivery.ID()))
	}
	if b.deps.Notifier == nil {
		return nil
	}
	c, found, err := b.deps.Store.Channel(ctx, ws, p.Event.Channel.ID)
	if err != nil || !found || !c.Consent.StoresMessages() {
		return wrap(event, err)
	}
	return wrap(event, b.deps.Notifier.PostEphemeral(ctx, ws, p.TeamID, p.Event.Channel.ID, p.Event.User, JoinNotice))
}

// uninstall handles app_uninstalled and tokens_revoked in one claimed step, the uninstall
// transaction: it takes the lifecycle lock of the workspace's SLACK connections of the team,
// erases the team's Slack data, and moves each live connection to UNINSTALLED as the domain's
// state machine decides. Either all of it commits or none. A tokens_revoked that names only user
// tokens leaves the app installed and changes nothing.
func (b base) uninstall(ctx context.Context, d ports.Dispatch) error {
	event := d.Delivery.EventType()
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		callback
		Event *struct {
			Type   string `json:"type"`
			Tokens *struct {
				OAuth []string `json:"oauth"`
				Bot   []string `json:"bot"`
			} `json:"tokens"`
		} `json:"event"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.TeamID == "" || p.Event == nil {
		return malformed(event, "an uninstall event needs a team")
	}
	if p.Event.Type == EventTokensRevoked && p.Event.Tokens != nil && len(p.Event.Tokens.Bot) == 0 {
		return nil
	}
	return wrap(event, b.step(ctx, StepConnectionUninstall, func(ctx context.Context, tx ports.Tx) error {
		conns, err := b.deps.Store.LockTeamConnections(ctx, tx, ws, p.TeamID)
		if err != nil {
			return err
		}
		if err := b.deps.Store.EraseTeam(ctx, tx, ws, p.TeamID); err != nil {
			return err
		}
		for _, c := range conns {
			next, err := c.State.Next(connection.Uninstall)
			if errors.Is(err, connection.ErrForbiddenTransition) {
				continue // already UNINSTALLED: the erasure above is all that is left to do
			}
			if err != nil {
				return err
			}
			if err := b.deps.Store.SetConnectionState(ctx, tx, ws, c.ID, next); err != nil {
				return err
			}
		}
		return nil
	}))
}
