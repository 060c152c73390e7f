package slackhandlers

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// storedSubtypes are the channel message subtypes that are messages people wrote or shared;
// join and leave notices, topic changes and the like are not mirrored.
var storedSubtypes = map[string]bool{
	"": true, "thread_broadcast": true, "bot_message": true, "file_share": true, "me_message": true,
}

// channelMessage handles a message event of a channel: insert, edit or delete, each written
// only while the channel's registry row has consent, checked inside the step's transaction.
func (b base) channelMessage(ctx context.Context, d ports.Dispatch, ws int64, team string, m message) error {
	eventID := d.Delivery.ID()
	switch m.Subtype {
	case "message_changed":
		return b.editMessage(ctx, ws, team, m, eventID)
	case "message_deleted":
		ts := m.DeletedTS
		if ts == "" && m.PreviousMessage != nil {
			ts = m.PreviousMessage.TS
		}
		if !validTS(ts) {
			return malformed(EventMessage, "message_deleted needs the deleted message's ts")
		}
		// Under the channel's consent the deletion keeps a tombstone even of a message the
		// mirror never had, so a backfill page read before it cannot store the message; without
		// consent only a stored message becomes a tombstone (nothing new is stored).
		return b.step(ctx, StepMessageDelete, func(ctx context.Context, tx ports.Tx) error {
			ok, _, err := b.consent(ctx, tx, ws, m.Channel)
			if err != nil {
				return err
			}
			if ok {
				return b.deps.Store.TombstoneMessage(ctx, tx, ws, slackmodel.MessageDelete{
					TeamID: team, ChannelID: m.Channel, TS: ts, PostedAt: tsTime(ts), EventID: eventID,
				})
			}
			return b.deps.Store.DeleteMessage(ctx, tx, ws, m.Channel, ts, eventID)
		})
	}
	if !storedSubtypes[m.Subtype] {
		return nil
	}
	if !validTS(m.TS) {
		return malformed(EventMessage, "a message needs a ts")
	}
	msg := m.channelMessage(team, m.Channel, eventID)
	// A message of a channel whose consent was revoked claims the channel erase instead of an
	// insert: whatever is still stored of the channel goes, so the revoke stays complete. The
	// read decides which step to run; each step checks the consent again under its lock.
	c, found, err := b.deps.Store.Channel(ctx, ws, m.Channel)
	if err != nil {
		return err
	}
	if found && c.Consent == slackmodel.ConsentRevoked {
		return b.step(ctx, StepChannelErase, func(ctx context.Context, tx ports.Tx) error {
			if _, state, err := b.consent(ctx, tx, ws, m.Channel); err != nil || state != slackmodel.ConsentRevoked {
				return err
			}
			_, err := b.deps.Store.EraseChannelMessages(ctx, tx, ws, m.Channel)
			return err
		})
	}
	return b.step(ctx, StepMessageInsert, func(ctx context.Context, tx ports.Tx) error {
		if ok, _, err := b.consent(ctx, tx, ws, m.Channel); err != nil || !ok {
			return err
		}
		_, err := b.deps.Store.InsertMessage(ctx, tx, ws, msg)
		return err
	})
}

// consent reports whether the channel stores messages now, holding the registry row's shared
// lock until the step commits; it also returns the state it found.
func (b base) consent(ctx context.Context, tx ports.Tx, ws int64, channel string) (bool, slackmodel.ConsentState, error) {
	c, found, err := b.deps.Store.ChannelConsent(ctx, tx, ws, channel)
	if err != nil || !found {
		return false, slackmodel.ConsentState{}, err
	}
	return c.Consent.StoresMessages(), c.Consent, nil
}

// editMessage handles message_changed in three claimed steps: the base message (the version
// before the edit, when the mirror never saw it), the text and the edit timestamp. Each is a
// fixed name, so a retry after any of them committed finishes the others; the text's version is
// the edit's timestamp, so an older edit never replaces a newer text.
func (b base) editMessage(ctx context.Context, ws int64, team string, m message, eventID int64) error {
	if m.Message == nil || !validTS(m.Message.TS) {
		return malformed(EventMessage, "message_changed needs the changed message and its ts")
	}
	if m.Message.Subtype != "" && !storedSubtypes[m.Message.Subtype] {
		return nil
	}
	changed := *m.Message
	edited := m.EventTS
	if edited == "" {
		edited = m.TS
	}
	if changed.Edited != nil && validTS(changed.Edited.TS) {
		edited = changed.Edited.TS
	}
	if !validTS(edited) {
		return malformed(EventMessage, "message_changed needs the edit's timestamp")
	}
	baseText := changed.Text
	if m.PreviousMessage != nil && m.PreviousMessage.TS == changed.TS {
		baseText = m.PreviousMessage.Text
	}
	original := slackmodel.Message{
		TeamID: team, ChannelID: m.Channel, TS: changed.TS, ThreadTS: changed.ThreadTS, UserID: changed.User,
		Text: baseText, PostedAt: tsTime(changed.TS), EventID: eventID,
	}
	edit := slackmodel.MessageEdit{ChannelID: m.Channel, TS: changed.TS, Text: changed.Text, EditedTS: edited, EventID: eventID}

	err := b.step(ctx, StepMessageInsert, func(ctx context.Context, tx ports.Tx) error {
		if ok, _, err := b.consent(ctx, tx, ws, m.Channel); err != nil || !ok {
			return err
		}
		_, err := b.deps.Store.InsertMessage(ctx, tx, ws, original)
		return err
	})
	if err != nil {
		return err
	}
	err = b.step(ctx, StepMessageEditText, func(ctx context.Context, tx ports.Tx) error {
		if ok, _, err := b.consent(ctx, tx, ws, m.Channel); err != nil || !ok {
			return err
		}
		return b.deps.Store.EditMessageText(ctx, tx, ws, edit)
	})
	if err != nil {
		return err
	}
	return b.step(ctx, StepMessageEditTimestamp, func(ctx context.Context, tx ports.Tx) error {
		if ok, _, err := b.consent(ctx, tx, ws, m.Channel); err != nil || !ok {
			return err
		}
		return b.deps.Store.EditMessageTimestamp(ctx, tx, ws, edit)
	})
}
