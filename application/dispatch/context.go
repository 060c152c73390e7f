package dispatch

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// dispatchKey is the one sanctioned context value of the core: the dispatch identity (event id
// and lease epoch) of the delivery whose handler runs on this goroutine. Only the step runner
// reads it; nothing else may depend on it.
type dispatchKey struct{}

// detachedKey marks a context that was explicitly detached, so a lookup below it finds nothing
// even when a parent context carries an identity.
type detachedKey struct{}

// WithDispatch binds the dispatch identity for the handler call. The consumer calls it on the
// goroutine that runs the handler and lets the context go when the handler returns (the Go
// form of the seed's "removes it in finally").
func WithDispatch(ctx context.Context, f erasure.Fence) context.Context {
	return context.WithValue(context.WithValue(ctx, detachedKey{}, false), dispatchKey{}, f)
}

// DispatchFrom returns the dispatch identity bound to ctx, if any.
func DispatchFrom(ctx context.Context) (erasure.Fence, bool) {
	if d, _ := ctx.Value(detachedKey{}).(bool); d {
		return erasure.Fence{}, false
	}
	f, ok := ctx.Value(dispatchKey{}).(erasure.Fence)
	return f, ok && !f.IsZero()
}

// Detach returns a context for work that leaves the dispatch goroutine (a goroutine, a queued
// job, an after-commit callback): it keeps ctx's values and cancellation but carries no
// dispatch identity, so that work is not fenced by, and cannot write steps of, the delivery.
// Such work owns its idempotency (natural keys, state transitions, delivery protocols).
func Detach(ctx context.Context) context.Context {
	return context.WithValue(ctx, detachedKey{}, true)
}

// rejectionsKey carries the dispatch's *inbox.FenceRejections: every fence rejection the
// DeliveryInbox returned to the handler, so the consumer sees one the handler swallowed.
type rejectionsKey struct{}

// WithFenceRejections binds r as the dispatch's memory of fence rejections (the dispatcher
// binds a fresh one per handler call, next to the identity).
func WithFenceRejections(ctx context.Context, r *inbox.FenceRejections) context.Context {
	return context.WithValue(ctx, rejectionsKey{}, r)
}

// FenceRejectionsFrom returns the dispatch's memory of fence rejections; nil (which records
// nothing and changes no verdict) outside dispatch or on a detached context.
func FenceRejectionsFrom(ctx context.Context) *inbox.FenceRejections {
	if d, _ := ctx.Value(detachedKey{}).(bool); d {
		return nil
	}
	r, _ := ctx.Value(rejectionsKey{}).(*inbox.FenceRejections)
	return r
}

// RecordFenceRejection remembers err for the dispatch on ctx when it is a fence rejection
// (busy, erased, lease lost). The DeliveryInbox calls it with every error it returns.
func RecordFenceRejection(ctx context.Context, err error) {
	if err != nil && inbox.IsFenceRejection(err) {
		FenceRejectionsFrom(ctx).Record(err)
	}
}

// RecordOwnDeletion remembers for the dispatch on ctx that a committed transaction deleted the
// delivery's own row on purpose (Tx.DeletesOwnEvent). The DeliveryInbox calls it after such a
// commit; outside dispatch or on a detached context it records nothing.
func RecordOwnDeletion(ctx context.Context) {
	FenceRejectionsFrom(ctx).RecordOwnDeletion()
}

// MaxRecursionDepth is how deep recursive handler code may descend (Descend). It equals the
// nesting admission accepts in a payload (internal/jsonscan.MaxDepth, encoding/json's limit), so
// a walk with one level per level of the payload always fits, while a walk that runs away (a
// cycle of ids in the payload) stops about a hundred times before a Go stack could overflow.
const MaxRecursionDepth = 10000

// depthKey carries how deep recursive code on this context has descended.
type depthKey struct{}

// Descend is the one guard of recursive handler code: call it on entry of each recursive call
// and pass the returned context down. Past MaxRecursionDepth it returns
// *inbox.RecursionLimitError, which uses the unknown-failure budget like a panic. A Go stack
// overflow cannot be recovered (it kills the process, see docs/failures.md),
// so recursion that the payload drives must not rely on the stack to stop it.
func Descend(ctx context.Context) (context.Context, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxRecursionDepth {
		return ctx, &inbox.RecursionLimitError{Limit: MaxRecursionDepth}
	}
	return context.WithValue(ctx, depthKey{}, depth+1), nil
}
