// Package beaconhandlers mirrors Beacon incident deliveries into the data of the workspace whose
// inbox row is dispatched, writing only through the DeliveryInbox and the Store of
// beaconmodel. Every incident event (incident.opened, incident.updated, incident.resolved) is
// one step, "beacon.incident.mirror": the incident upsert under its version rule, which
// publishes the change in the same transaction. A retried delivery finds the step committed
// and writes nothing again; a delivery that does not decode is a parsing failure.
package beaconhandlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// EventTypes are the Beacon event types the handlers mirror, as Beacon names them in "type".
var EventTypes = []string{"incident.opened", "incident.updated", "incident.resolved"}

// StepIncidentMirror is the fixed step name, stored in provider_event_step: keep it stable.
var StepIncidentMirror = inbox.MustStep("beacon.incident.mirror")

// Deps are what the handlers need. MaxTitleBytes bounds the mirrored title (longer ones are cut
// at a character boundary); 0 keeps titles whole.
type Deps struct {
	Inbox         ports.DeliveryInbox
	Store         beaconmodel.Store
	MaxTitleBytes int
}

// Register wires the Beacon handlers into reg. Errors: missing deps, the registry's refusal.
func Register(reg contract.HandlerRegistrar, deps Deps) error {
	if deps.Inbox == nil || deps.Store == nil {
		return errors.New("beacon handlers: an inbox and a mirror store are required")
	}
	for _, e := range EventTypes {
		if err := reg.Register(beacon.Provider, e, ports.HandlerFunc(deps.incident)); err != nil {
			return err
		}
	}
	return nil
}

// payload is the part of a Beacon delivery the handlers read.
type payload struct {
	Incident struct {
		ID         string     `json:"id"`
		PageID     string     `json:"pageId"`
		Title      string     `json:"title"`
		Status     string     `json:"status"`
		Impact     string     `json:"impact"`
		UpdatedAt  time.Time  `json:"updatedAt"`
		ResolvedAt *time.Time `json:"resolvedAt"`
		Author     struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"author"`
	} `json:"incident"`
}

func (deps Deps) incident(ctx context.Context, d ports.Dispatch) error {
	if d.WorkspaceID <= 0 {
		return fmt.Errorf("beacon %s: row %d has no workspace", d.Delivery.EventType(), d.Delivery.ID())
	}
	var p payload
	if err := json.NewDecoder(bytes.NewReader(d.Payload)).Decode(&p); err != nil {
		return inbox.ParsingFailure(fmt.Errorf("beacon %s payload: %w", d.Delivery.EventType(), err))
	}
	if p.Incident.ID == "" {
		return inbox.ParsingFailure(fmt.Errorf("beacon %s payload: no incident id", d.Delivery.EventType()))
	}
	in := p.Incident
	i := beaconmodel.Incident{ID: in.ID, PageID: in.PageID, Title: cut(in.Title, deps.MaxTitleBytes), Status: in.Status,
		Impact: in.Impact, AuthorID: in.Author.ID, AuthorName: in.Author.Name, ResolvedAt: in.ResolvedAt,
		UpdatedAt: in.UpdatedAt.UTC(), EventID: d.Delivery.ID()}
	_, err := deps.Inbox.Step(ctx, StepIncidentMirror, func(ctx context.Context, tx ports.Tx) error {
		return deps.Store.UpsertIncident(ctx, tx, d.WorkspaceID, i)
	})
	return err
}

// cut is s in at most n bytes, cut at a character boundary (n 0: whole).
func cut(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
