package ports

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Tx is a business write transaction opened by the DeliveryInbox. It is opaque to the core:
// provider handlers pass it to the mirror stores (ports of their own), whose PostgreSQL
// adapters write through it. Handlers never open transactions themselves.
type Tx interface {
	// DeletesOwnEvent records that this transaction deliberately deletes its own delivery row
	// (for example an uninstall that erases the team's data): the commit-time recheck then
	// accepts the missing row, and the consumer counts the delivery as handled.
	DeletesOwnEvent()
}

// DeliveryInbox runs a handler's database writes in named, idempotent steps (the seed's
// DeliveryInbox). On the dispatch goroutine (ctx carries WithDispatch) every write transaction
// is fenced: it refuses to start while person erasure is in progress or a required row is
// busy (inbox.ErrBusy: retried in order without budget), and re-checks at commit, under a
// shared row lock, that the delivery is still LEASED under the same epoch (inbox.ErrLeaseLost)
// and still exists (inbox.ErrErased). Outside dispatch (a sync job, a test) it claims nothing
// and the writes follow their natural-key and version rules.
type DeliveryInbox interface {
	// Step runs fn in one transaction together with the claim of step: the step row is
	// inserted with ON CONFLICT DO NOTHING, and a conflict skips fn and returns ran=false (the
	// step committed in an earlier attempt). Errors: fn's error, the fence errors above, or
	// *inbox.TransientError; on any error nothing of the step is committed.
	Step(ctx context.Context, step inbox.Step, fn func(ctx context.Context, tx Tx) error) (ran bool, err error)

	// Steps runs fn in one transaction together with the claims of steps, made as Step makes
	// one, all in one statement: claimed[i] is true when steps[i] is this attempt's to write,
	// false when it committed in an earlier attempt (or repeats an earlier name of steps). When
	// none is claimed fn is not called. ran is the number claimed, once the transaction
	// committed. Errors as for Step; on any error nothing of the steps is committed.
	Steps(ctx context.Context, steps []inbox.Step, fn func(ctx context.Context, tx Tx, claimed []bool) error) (ran int, err error)

	// Write runs fn in one fenced transaction without a step: natural-key upserts that are
	// idempotent by themselves (user and label upserts). Errors as for Step.
	Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	// Completed reports whether step committed for the delivery on ctx (false outside
	// dispatch). A retry uses it to reconstruct context that a skipped step would have built.
	Completed(ctx context.Context, step inbox.Step) (bool, error)
}
