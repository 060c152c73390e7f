// Package handlers mirrors subscribed Outline events into the data of the workspace whose inbox
// row is dispatched, writing only through the DeliveryInbox and the Store of this package.
//
// Boundaries (the seed's "Outline webhook handler" row): the document mirror write
// ("outline.document.mirror") and the event record ("outline.event.record") are separate steps,
// each its own transaction. A retry after the mirror write committed finishes the missing event
// record before the equal-version fast path is even considered, and the fast path ("the stored
// document is already at this version: nothing to mirror") records the event too, so no path
// skips the record. Collection writes are steps named by their purpose and the collection's
// stable id ("outline.collection.upsert/<id>"). Failure and poison accounting stay per attempt:
// every failure is returned to the consumer.
package outlinehandlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Deps are what the handlers need.
type Deps struct {
	Inbox ports.DeliveryInbox
	Store outlinemodel.Store
}

// Event types, as Outline names them in the envelope's "event".
var (
	documentEvents = []string{
		"documents.create", "documents.publish", "documents.unpublish", "documents.update",
		"documents.title_change", "documents.move", "documents.archive", "documents.unarchive",
		"documents.restore", "documents.delete", "documents.permanent_delete",
	}
	collectionEvents = []string{
		"collections.create", "collections.update", "collections.move", "collections.permission_changed",
		"collections.archive", "collections.restore", "collections.delete",
	}
	// recordedEvents have nothing to mirror here; only their event record is written.
	recordedEvents = []string{
		"comments.create", "comments.update", "comments.delete", "revisions.create", "shares.create",
		"shares.update", "shares.revoke", "users.create", "users.signin", "users.update", "users.suspend",
		"users.activate", "users.delete", "users.invite", "groups.create", "groups.update", "groups.delete",
		"groups.add_user", "groups.remove_user",
	}
)

// Fixed step names, stored in provider_event_step: keep them stable across releases.
var (
	StepDocumentMirror = inbox.MustStep("outline.document.mirror")
	StepEventRecord    = inbox.MustStep("outline.event.record")
)

// CollectionStep names a collection write by its purpose ("upsert", "delete") and the
// collection's stable id.
func CollectionStep(purpose, collectionID string) (inbox.Step, error) {
	return inbox.NewStep("outline.collection."+purpose, collectionID)
}

// Register wires every Outline handler into reg. Errors: invalid deps, or the registry's refusal.
func Register(reg contract.HandlerRegistrar, deps Deps) error {
	if deps.Inbox == nil || deps.Store == nil {
		return errors.New("outline handlers: an inbox and a mirror store are required")
	}
	b := base{deps: deps}
	for _, group := range []struct {
		events []string
		h      ports.HandlerFunc
	}{{documentEvents, b.document}, {collectionEvents, b.collection}, {recordedEvents, b.recordOnly}} {
		for _, e := range group.events {
			if err := reg.Register(outline.Provider, e, group.h); err != nil {
				return err
			}
		}
	}
	return nil
}

// EventTypes lists the event types Register wires.
func EventTypes() []string {
	out := append([]string(nil), documentEvents...)
	out = append(out, collectionEvents...)
	return append(out, recordedEvents...)
}

type base struct{ deps Deps }

// envelope is Outline's webhook body.
type envelope struct {
	ID        string `json:"id"`
	ActorID   string `json:"actorId"`
	CreatedAt olTime `json:"createdAt"`
	Event     string `json:"event"`
}

// olTime is an Outline timestamp (ISO 8601); null or "" is none.
type olTime struct {
	t     time.Time
	valid bool
}

func (o *olTime) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if s == "null" || s == "" {
		*o = olTime{}
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("timestamp %q is not ISO 8601", s)
	}
	*o = olTime{t: t.UTC(), valid: true}
	return nil
}

func (o olTime) ptr() *time.Time {
	if !o.valid {
		return nil
	}
	t := o.t
	return &t
}

func (o olTime) later(other olTime) olTime {
	if !o.valid || (other.valid && other.t.After(o.t)) {
		return other
	}
	return o
}

// record builds the event record of an envelope.
func record(env envelope, modelID string, eventID int64) outlinemodel.Event {
	return outlinemodel.Event{
		DeliveryID: env.ID, Event: env.Event, ModelID: modelID, ActorID: env.ActorID,
		OccurredAt: env.CreatedAt.ptr(), EventID: eventID,
	}
}

func workspace(event string, d ports.Dispatch) (int64, error) {
	if d.WorkspaceID <= 0 {
		return 0, fmt.Errorf("outline %s: row %d has no workspace", event, d.Delivery.ID())
	}
	return d.WorkspaceID, nil
}

func (b base) step(ctx context.Context, s inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	_, err := b.deps.Inbox.Step(ctx, s, fn)
	return err
}

// recordEvent writes the event record in its own step.
func (b base) recordEvent(ctx context.Context, ws int64, e outlinemodel.Event) error {
	return b.step(ctx, StepEventRecord, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.RecordEvent(ctx, tx, ws, e)
	})
}

func wrap(event string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("outline %s: %w", event, err)
}

// decode reads a stored payload into v; one that does not decode is a permanent parsing failure.
func decode(event string, payload []byte, v any) error {
	if err := json.NewDecoder(bytes.NewReader(payload)).Decode(v); err != nil {
		return inbox.ParsingFailure(fmt.Errorf("outline %s payload: %w", event, err))
	}
	return nil
}

func malformed(event, detail string) error {
	return inbox.ParsingFailure(fmt.Errorf("outline %s payload: %s", event, detail))
}
