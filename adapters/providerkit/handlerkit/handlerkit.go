// Package handlerkit is what every provider's event handlers (adapters/<provider>/<provider>handlers)
// share besides their model and their writes: wiring a provider's handlers into the registrar in
// a stable order (Register), the one shape of a handler failure (Kit: a workspace-less row, an
// event named in a wrapped error, a stored payload that does not decode or lacks a field, which
// is a permanent parsing failure), and running a named step (Step). A provider's handlers keep
// only what decides their writes.
package handlerkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Needs refuses the dependencies of p's handlers without an inbox or a mirror store: every
// handler writes through both. The store is the provider's own store interface.
func Needs(p provider.Provider, in ports.DeliveryInbox, store any) error {
	if in == nil || store == nil {
		return fmt.Errorf("%s handlers: an inbox and a mirror store are required", p.Label())
	}
	return nil
}

// Register wires hs into reg for p, in the order of events (a provider's EventTypes), so the
// registry sees the same order on every start. Errors: the registry's refusal (a second
// handler for an event type), or an event of events without a handler in hs.
func Register(reg contract.HandlerRegistrar, p provider.Provider, events []string, hs map[string]ports.Handler) error {
	for _, event := range events {
		h, ok := hs[event]
		if !ok {
			return fmt.Errorf("%s handlers: no handler for %q", p.Label(), event)
		}
		if err := reg.Register(p, event, h); err != nil {
			return err
		}
	}
	return nil
}

// Step runs fn as the named step of the dispatched delivery. A step that committed in an
// earlier attempt is skipped.
func Step(ctx context.Context, in ports.DeliveryInbox, s inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	_, err := in.Step(ctx, s, fn)
	return err
}

// Kit names one provider's handler failures: its value is the provider's label ("github"),
// the first word of every error it makes.
type Kit string

// Workspace is the workspace of a work event's row. A work row always has one; a row without it
// was routed wrongly and must not write into some other workspace's mirror.
func (k Kit) Workspace(event string, d ports.Dispatch) (int64, error) {
	if d.WorkspaceID <= 0 {
		return 0, fmt.Errorf("%s %s: row %d has no workspace", k, event, d.Delivery.ID())
	}
	return d.WorkspaceID, nil
}

// Wrap names the event of a failure and keeps err in the chain, so the consumer still
// classifies fence rejections, transient failures and parsing failures. A nil err stays nil.
func (k Kit) Wrap(event string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", k, event, err)
}

// Decode reads a stored payload into v. A payload that does not decode fails the same way on
// every attempt: a permanent parsing failure, so the row becomes DEAD on its first attempt
// instead of using the retry budget.
func (k Kit) Decode(event string, payload []byte, v any) error {
	if err := json.NewDecoder(bytes.NewReader(payload)).Decode(v); err != nil {
		return inbox.ParsingFailure(fmt.Errorf("%s %s payload: %w", k, event, err))
	}
	return nil
}

// Malformed is the permanent parsing failure of a payload that decoded but lacks what the
// handler needs. The detail never quotes the payload (it may hold person data).
func (k Kit) Malformed(event, format string, args ...any) error {
	return inbox.ParsingFailure(fmt.Errorf("%s %s payload: %s", k, event, fmt.Sprintf(format, args...)))
}
