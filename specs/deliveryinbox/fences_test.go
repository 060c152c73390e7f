package deliveryinbox_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("The lease fence", func() {
	var eventID int64

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
	})

	When("the lease is taken back while a step runs", func() {
		It("rolls the whole step back at commit, and the new lease holder then commits it", func(ctx SpecContext) {
			ran, err := box.Step(dispatchCtx(ctx, eventID, 1), step, func(ctx context.Context, tx ports.Tx) error {
				if err := writeItem(ctx, tx, "stale"); err != nil {
					return err
				}
				nextClaim(ctx, eventID) // must not wait for the step's key-share lock
				return nil
			})
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(inbox.Classify(err)).To(Equal(inbox.LeaseLost))
			Expect(ran).To(BeFalse())
			Expect(items(ctx)).To(BeEmpty())
			Expect(stepRows(ctx, eventID)).To(BeEmpty())

			ran, err = box.Step(dispatchCtx(ctx, eventID, 2), step, func(ctx context.Context, tx ports.Tx) error {
				return writeItem(ctx, tx, "current")
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(ran).To(BeTrue())
			Expect(items(ctx)).To(Equal(map[string]int{"current": 1}))
			Expect(stepRows(ctx, eventID)).To(Equal([]string{step.String()}))
		})
	})

	When("another server took the lease over before the step began", func() {
		It("refuses the step at its fence, writing nothing", func(ctx SpecContext) {
			Expect(takeOver(ctx, eventID)).To(Equal(inbox.Epoch(2)))
			ran, err := box.Step(dispatchCtx(ctx, eventID, 1), step, func(ctx context.Context, tx ports.Tx) error {
				return writeItem(ctx, tx, "stale")
			})
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(ran).To(BeFalse())
			Expect(items(ctx)).To(BeEmpty())
			Expect(stepRows(ctx, eventID)).To(BeEmpty())
		})
	})

	When("a write without a step loses its lease while it runs", func() {
		It("is rolled back at commit too", func(ctx SpecContext) {
			err := box.Write(dispatchCtx(ctx, eventID, 1), func(ctx context.Context, tx ports.Tx) error {
				if err := writeItem(ctx, tx, "user-upsert"); err != nil {
					return err
				}
				nextClaim(ctx, eventID)
				return nil
			})
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(items(ctx)).To(BeEmpty())
		})
	})

	When("a renewal holds the event row at the moment of the commit-time recheck", func() {
		It("rolls the step back as busy instead of waiting or committing unchecked", func(ctx SpecContext) {
			hctx, cancel := context.WithTimeout(dispatchCtx(ctx, eventID, 1), quick)
			defer cancel()
			ran, err := box.Step(hctx, step, func(ctx context.Context, tx ports.Tx) error {
				// Granted at once next to the step's key-share lock; kept until the spec ends.
				holdLock(ctx, `SELECT id FROM provider_event WHERE id = $1 FOR NO KEY UPDATE`, eventID)
				return writeItem(ctx, tx, "checked")
			})
			Expect(err).To(MatchError(inbox.ErrBusy))
			Expect(ran).To(BeFalse())
			Expect(items(ctx)).To(BeEmpty())
			Expect(stepRows(ctx, eventID)).To(BeEmpty())
		})
	})

	When("work leaves the dispatch goroutine on a detached context", func() {
		It("is not fenced by the delivery", func(ctx SpecContext) {
			hctx := dispatchCtx(ctx, eventID, 1)
			Expect(takeOver(ctx, eventID)).To(Equal(inbox.Epoch(2))) // this claimer's lease is gone

			Expect(box.Write(dispatch.Detach(hctx), func(ctx context.Context, tx ports.Tx) error {
				return writeItem(ctx, tx, "detached")
			})).To(Succeed())
			Expect(box.Write(hctx, func(ctx context.Context, tx ports.Tx) error {
				return writeItem(ctx, tx, "fenced")
			})).To(MatchError(inbox.ErrLeaseLost))
			Expect(items(ctx)).To(Equal(map[string]int{"detached": 1}))
		})
	})
})

var _ = Describe("Erasure and contention", func() {
	var (
		eventID int64
		called  bool
		policy  inbox.RetryPolicy
	)

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
		called = false
		var err error
		policy, err = inbox.NewRetryPolicy(2*time.Second, 5*time.Minute, 10)
		Expect(err).NotTo(HaveOccurred())
	})

	// quickStep runs the spec step under the event's lease within the quick bound: a fence that
	// waited for a lock instead of skipping it would end with a deadline error, not with the
	// fence's verdict.
	quickStep := func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(dispatchCtx(ctx, eventID, 1), quick)
		defer cancel()
		return box.Step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
			called = true
			return writeItem(ctx, tx, "item")
		})
	}

	When("the event is erased while its handler runs", func() {
		It("stops the next write, which the consumer drops as erased during processing", func(ctx SpecContext) {
			Expect(box.Step(dispatchCtx(ctx, eventID, 1), inbox.MustStep("spec.before"), func(ctx context.Context, tx ports.Tx) error {
				return writeItem(ctx, tx, "before")
			})).To(BeTrue())
			_, err := otherPool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, eventID)
			Expect(err).NotTo(HaveOccurred())

			ran, err := quickStep(ctx)
			Expect(err).To(MatchError(inbox.ErrErased))
			Expect(ran).To(BeFalse())
			Expect(called).To(BeFalse())
			Expect(inbox.Classify(err)).To(Equal(inbox.Erased))
			decision := policy.Decide(err, 1, 0, time.Now())
			Expect(decision.Outcome()).To(Equal(inbox.OutcomeDropped))
			Expect(decision.DropReason()).To(Equal(inbox.DropErasedDuringProcessing))
			Expect(items(ctx)).To(Equal(map[string]int{"before": 1}))
		})
	})

	When("another transaction holds the event row for update (a reaper)", func() {
		It("reports busy without waiting for the lock, as contention", func(ctx SpecContext) {
			release := holdLock(ctx, `SELECT id FROM provider_event WHERE id = $1 FOR UPDATE`, eventID)
			ran, err := quickStep(ctx)
			release() // only now: the step above returned while the lock was held
			Expect(err).To(MatchError(inbox.ErrBusy))
			Expect(ran).To(BeFalse())
			Expect(called).To(BeFalse())
			Expect(inbox.Classify(err)).To(Equal(inbox.Contention))
			Expect(policy.Decide(err, 1, 0, time.Now()).Outcome()).To(Equal(inbox.OutcomeRetried))
			Expect(stepRows(ctx, eventID)).To(BeEmpty())
		})
	})

	When("a workspace operation holds the event's workspace", func() {
		It("reports busy without waiting for the lock", func(ctx SpecContext) {
			release := holdLock(ctx, `SELECT id FROM workspace FOR UPDATE`)
			ran, err := quickStep(ctx)
			release()
			Expect(err).To(MatchError(inbox.ErrBusy))
			Expect(ran).To(BeFalse())
			Expect(called).To(BeFalse())
		})
	})

	When("person erasure is in progress", func() {
		It("refuses the write while the copy fence is flagged", func(ctx SpecContext) {
			_, err := otherPool.Exec(ctx, `UPDATE inbox_erasure_fence SET in_progress = true WHERE name = 'inbox'`)
			Expect(err).NotTo(HaveOccurred())
			ran, err := quickStep(ctx)
			Expect(err).To(MatchError(inbox.ErrBusy))
			Expect(ran).To(BeFalse())
			Expect(called).To(BeFalse())
			Expect(inbox.Classify(err)).To(Equal(inbox.Contention))
		})

		It("refuses the write without waiting while erasure holds the copy fence", func(ctx SpecContext) {
			release := holdLock(ctx, `SELECT name FROM inbox_erasure_fence WHERE name = 'inbox' FOR UPDATE`)
			ran, err := quickStep(ctx)
			release()
			Expect(err).To(MatchError(inbox.ErrBusy))
			Expect(ran).To(BeFalse())
			Expect(called).To(BeFalse())
		})
	})

	// A named step also key-shares the event through its step row's foreign key; a write
	// without a step holds only the event fence's lock, so both are shown. The reaper and the
	// renewal are the inbox store's own statements (Store.Reap, Store.Renew), run by another
	// server's store whose clock is past the lease: a reaper that waited for the write's lock
	// would end at the quick deadline, one that took a weaker lock would take the lease back.
	DescribeTable("while a write holds its key-share lock on the event, the reaper passes over the row and renewal goes on",
		func(ctx SpecContext, write func(ctx context.Context, fn func(context.Context, ports.Tx) error) error) {
			clock := support.NewClock()
			clock.Advance(3 * time.Minute) // the lease leasedEvent wrote runs for 2 minutes
			other, err := inboxstore.New(otherPool, inboxstore.Config{Clock: clock})
			Expect(err).NotTo(HaveOccurred())
			err = write(dispatchCtx(ctx, eventID, 1), func(ctx context.Context, tx ports.Tx) error {
				qctx, cancel := context.WithTimeout(ctx, quick)
				defer cancel()
				reaped, err := other.Reap(qctx, policy, 10)
				Expect(err).NotTo(HaveOccurred(), "the reaper must not wait on the fenced write")
				Expect(reaped).To(BeEmpty(), "the reaper must leave the fenced write's lease alone")
				Expect(leaseOf(ctx, eventID)).To(Equal(leaseState{State: "LEASED", Epoch: 1}))

				renewed, err := other.Renew(qctx, []ports.Ack{{ID: eventID, Epoch: 1}}, 2*time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(renewed).To(Equal([]bool{true}), "renewal must extend the lease during the write")
				return writeItem(ctx, tx, "during-renewal")
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(items(ctx)).To(Equal(map[string]int{"during-renewal": 1}))

			// Once the write committed, the same reaper takes the row when its renewed lease has
			// run out: it was the write's lock that made it pass over.
			clock.Advance(3 * time.Minute)
			reaped, err := other.Reap(ctx, policy, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(reaped).To(HaveLen(1))
			Expect(reaped[0].Delivery.ID()).To(Equal(eventID))
		},
		Entry("a named step", func(ctx context.Context, fn func(context.Context, ports.Tx) error) error {
			ran, err := box.Step(ctx, step, fn)
			if err == nil && !ran {
				return errors.New("step did not run")
			}
			return err
		}),
		Entry("a write without a step", func(ctx context.Context, fn func(context.Context, ports.Tx) error) error {
			return box.Write(ctx, fn)
		}),
	)
})

var _ = Describe("A handler step that deletes its own event", func() {
	var eventID int64

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
	})

	deleteOwnEvent := func(ctx context.Context, tx ports.Tx) error {
		if err := writeItem(ctx, tx, "uninstalled"); err != nil {
			return err
		}
		ptx, err := sqlkit.PgxTx(tx)
		if err != nil {
			return err
		}
		_, err = ptx.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, eventID)
		return err
	}

	It("commits when it declares the deletion", func(ctx SpecContext) {
		ran, err := box.Step(dispatchCtx(ctx, eventID, 1), step, func(ctx context.Context, tx ports.Tx) error {
			tx.DeletesOwnEvent()
			return deleteOwnEvent(ctx, tx)
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(ran).To(BeTrue())
		Expect(items(ctx)).To(Equal(map[string]int{"uninstalled": 1}))
		var left int
		Expect(otherPool.QueryRow(ctx, `SELECT count(*) FROM provider_event`).Scan(&left)).To(Succeed())
		Expect(left).To(BeZero())
	})

	It("is stopped as erased when it does not declare it", func(ctx SpecContext) {
		ran, err := box.Step(dispatchCtx(ctx, eventID, 1), step, deleteOwnEvent)
		Expect(err).To(MatchError(inbox.ErrErased))
		Expect(ran).To(BeFalse())
		Expect(items(ctx)).To(BeEmpty())
		Expect(stepRows(ctx, eventID)).To(BeEmpty())
	})
})
