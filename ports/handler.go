package ports

import (
	"context"
	"encoding/json"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// Dispatch is what a handler receives: the delivery (read-only) and the workspace of the row,
// which synchronous dispatch carries (0 for an installation row).
type Dispatch struct {
	Delivery    inbox.Delivery
	WorkspaceID int64
	Payload     json.RawMessage
	Headers     map[string]string
}

// Handler handles one event type of one provider. It returns nil when the event is handled
// (including a handler step that deleted its own event). Errors are classified by the domain:
// wrap decode errors with inbox.ParsingFailure, transport errors with inbox.Transient.
type Handler interface {
	Handle(ctx context.Context, d Dispatch) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, d Dispatch) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, d Dispatch) error { return f(ctx, d) }

// HandlerRegistry finds the handler of a provider's event type; false means there is nothing
// to do for that type (the row is completed and counted, not failed).
type HandlerRegistry interface {
	Lookup(p provider.Provider, eventType string) (Handler, bool)
}
