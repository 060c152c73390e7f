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
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/handlerkit"
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
	if err := handlerkit.Needs(outline.Provider, deps.Inbox, deps.Store); err != nil {
		return err
	}
	b := base{deps: deps}
	hs := map[string]ports.Handler{}
	for _, group := range []struct {
		events []string
		h      ports.HandlerFunc
	}{{documentEvents, b.document}, {collectionEvents, b.collection}, {recordedEvents, b.recordOnly}} {
		for _, e := range group.events {
			hs[e] = group.h
		}
	}
	return handlerkit.Register(reg, outline.Provider, EventTypes(), hs)
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

// The handlers' failures name the provider (handlerkit.Kit).
var decode, malformed, wrap, workspace = kit.Decode, kit.Malformed, kit.Wrap, kit.Workspace

const kit = handlerkit.Kit("outline")

func (b base) step(ctx context.Context, s inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	return handlerkit.Step(ctx, b.deps.Inbox, s, fn)
}

// recordEvent writes the event record in its own step.
func (b base) recordEvent(ctx context.Context, ws int64, e outlinemodel.Event) error {
	return b.step(ctx, StepEventRecord, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.RecordEvent(ctx, tx, ws, e)
	})
}
