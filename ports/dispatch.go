package ports

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
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
