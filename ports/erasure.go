package ports

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// ErasureMatches is the number of rows of one store that a scope matches now.
type ErasureMatches struct {
	Store   erasure.Store
	Matches int64
}

// ErasureStore keeps person-erasure requests and runs their passes over every store that can
// hold the person: the provider's mirror stores (PersonDataStore), the change feed, then the
// two inbox stores.
// All are live-predicate stores: a pass erases what the frozen scope matches at that moment,
// and in the inbox also the rows whose keys were frozen at start.
type ErasureStore interface {
	// Mirrors lists the stores an erasure of provider p runs before the inbox stores, in their
	// order: the provider's mirror store, then the change feed (erasure.ChangeFeed).
	Mirrors(p provider.Provider) []erasure.Store

	// Preview counts, per store in pass order, the rows a request with scope would match now
	// (including the id↔login pairs that Start would add), deleting nothing.
	// Errors: erasure.ErrUnknownSource when the scope's source namespace is not this
	// instance's; erasure.ErrInvalidRequest as Start.
	Preview(ctx context.Context, scope erasure.Scope) ([]ErasureMatches, error)

	// Start stores a RUNNING request asking for one pass, in one transaction with its frozen
	// scope (scope grown by the id↔login pairs found in matching payloads) and its frozen keys
	// (workspace, provider, delivery key of every row matched at that moment).
	// Errors: erasure.ErrUnknownSource (nothing is stored); erasure.ErrInvalidRequest when the
	// grown scope exceeds its bound.
	Start(ctx context.Context, scope erasure.Scope, requestedBy int64) (erasure.Request, error)

	// Erasure reads a request and its receipts (pass order, then store order).
	// Errors: ErrNotFound.
	Erasure(ctx context.Context, id int64) (erasure.Request, []erasure.Receipt, error)

	// Resume asks for one more pass (erasure.Request.Resume). It waits while a runner holds
	// the request, so it is never lost between that runner's last pass and its final state.
	// Errors: ErrNotFound.
	Resume(ctx context.Context, id int64) (erasure.Request, error)

	// Hold takes one RUNNING request that no runner of any server holds and whose retry time
	// (erasure.Request.RetryDelay after its last hold) has come, and calls work with it and its
	// receipts while holding it; the request work returns (its state, passes, retries and retry
	// delay, erasure.Request.Settle) is stored when it returns. An error from work stores
	// nothing (the request stays RUNNING for a later runner). A dead process releases its hold
	// with its session. ok is false when no request was free.
	Hold(ctx context.Context, work func(ctx context.Context, r erasure.Request, receipts []erasure.Receipt) (erasure.Request, error)) (ok bool, err error)

	// Pass runs one pass of the held request over store: it raises the copy fence (or finds it
	// raised by the pass's earlier store), waits for the fenced writes that began before it,
	// then erases: a mirror store through its PersonDataStore; an inbox store by deleting
	// every matching row in every state (their steps cascade) up to the highest id stored when
	// the pass began (the receipt's boundary), then rewriting the decoded strings of the other
	// rows' payloads that name the person (PersonFields.Text), row by row: a row that cannot be
	// rewritten is left as it was and listed in the receipt's FailedRows, and the pass goes
	// on. The receipt commits with the erasure. The fence
	// stays raised from the first store of a pass to its last (the installation inbox), whose
	// transaction lowers it: no fenced mirror write can commit between the mirror erasure and
	// the deletion of the deliveries it came from. Errors: context errors,
	// *inbox.TransientError, others; on an error nothing of the store was erased and the fence
	// is lowered again.
	Pass(ctx context.Context, erasureID int64, store erasure.Store, pass int) (erasure.Receipt, error)

	// LowerStaleFence lowers a copy fence left raised by a process that died mid-pass whose
	// request is no longer RUNNING (a RUNNING one is resumed by a runner, which lowers it).
	LowerStaleFence(ctx context.Context) (lowered bool, err error)
}
