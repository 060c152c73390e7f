// Package acmehandlers is the dispatch guard's fixture: a handler package of an imaginary
// provider. Every go statement that the guard must report carries a "want" comment naming what
// it takes along; the others must pass.
package acmehandlers

import (
	"context"
	"encoding/json"

	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type handler struct {
	payload []byte
	jobs    chan<- any
}

type issue struct{ Title string }

func (h *handler) enqueue(v any)                           { h.jobs <- v }
func (h *handler) sync(context.Context)                    {}
func (h *handler) replay(context.Context, ports.Dispatch)  {}
func parse(b []byte) (issue, error)                        { var i issue; return i, json.Unmarshal(b, &i) }
func (h *handler) write(_ context.Context, _ []byte) error { return nil }

func (h *handler) Handle(ctx context.Context, d ports.Dispatch) error {
	go h.enqueue(d)                             // want "raw inbox envelope"
	go h.enqueue(&d)                            // want "raw inbox envelope"
	go h.enqueue(d.Payload)                     // want "raw inbox envelope"
	go h.enqueue(d.Headers)                     // want "raw inbox envelope"
	go func() { h.enqueue(d.Payload) }()        // want "raw inbox envelope"
	go h.replay(dispatch.Detach(ctx), d)        // want "raw inbox envelope"
	go h.replay(ctx, d)                         // want "dispatch context" "raw inbox envelope"
	go func() { _ = h.write(ctx, d.Payload) }() // want "dispatch context" "raw inbox envelope"
	raw := d.Payload
	go h.enqueue(raw) // want "raw inbox envelope"
	copied := json.RawMessage(raw[:])
	go h.enqueue(copied) // want "raw inbox envelope"
	alias := d
	go func() { h.enqueue(alias.Payload) }() // want "raw inbox envelope"
	go h.sync(ctx)                           // want "dispatch context"

	// Values computed from the envelope, and detached contexts, may leave.
	parsed, err := parse(d.Payload)
	if err != nil {
		return err
	}
	go h.enqueue(parsed)
	go h.enqueue(parsed.Title)
	go h.enqueue(d.WorkspaceID)
	go h.enqueue(d.Delivery.ID())
	go h.sync(dispatch.Detach(ctx))
	go h.enqueue(h.payload) // a field named payload, not the envelope
	go func(d int) { h.enqueue(d) }(1)
	return h.process(ctx, d.Payload)
}

// process takes the payload on from Handle under the conventional name.
func (h *handler) process(ctx context.Context, payload []byte) error {
	go h.enqueue(payload) // want "raw inbox envelope"
	go func() {           // want "raw inbox envelope"
		_, _ = parse(payload)
	}()
	return h.write(ctx, payload)
}
