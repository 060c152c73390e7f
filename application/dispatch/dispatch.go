// Package dispatch binds the dispatch identity of a claimed delivery to the context of its
// handler call: the Go form of the seed's DeliveryInbox thread-local, bound on the goroutine
// that executes dispatch and gone when the handler returns. The consumer plugs BindDispatch
// into its DispatchContext seam; the DeliveryInbox is the only reader of the identity.
//
// The identity stays on the dispatch goroutine. Work that leaves it (a goroutine, a queued job,
// an after-commit callback) starts from Detach(ctx): it is not fenced by the delivery and
// cannot write its steps, so it owns its idempotency (natural keys, state transitions).
package dispatch

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// BindDispatch returns ctx carrying the fence of c: its event id and the epoch of the lease
// this claimer holds, so every write transaction of the handler is fenced by that lease. It
// also binds a fresh memory of the fence rejections the handler meets
// (FenceRejectionsFrom): the consumer judges the handler's result with it, so a handler
// that catches a rejected write and returns nil is treated as if it had returned the rejection.
//
// It panics when c has no id or no lease: the consumer dispatches only what it claimed, and a
// context without an identity would let the handler's writes run unfenced, unseen by a newer
// lease or by erasure, which is worse than failing the attempt loudly.
func BindDispatch(ctx context.Context, c ports.Claimed) context.Context {
	f, err := erasure.NewFence(c.Delivery.ID(), c.Delivery.Lease().Epoch())
	if err != nil {
		panic(fmt.Sprintf("dispatch: bind a delivery that was not claimed: %v", err))
	}
	return WithFenceRejections(WithDispatch(ctx, f), &inbox.FenceRejections{})
}
