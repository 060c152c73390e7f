package deliveryinbox_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Named steps", func() {
	var eventID int64

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
	})

	When("an attempt fails after some of its steps committed", func() {
		It("skips the committed steps on retry and completes the unfinished one", func(ctx SpecContext) {
			calls := map[string]int{}
			failAfterSecond := true
			handler := func(ctx context.Context) (ran []bool, err error) {
				for _, name := range []string{"first", "second", "third"} {
					r, err := box.Step(ctx, inbox.MustStep("spec."+name), func(ctx context.Context, tx ports.Tx) error {
						calls[name]++
						return writeItem(ctx, tx, name)
					})
					if err != nil {
						return ran, err
					}
					ran = append(ran, r)
					if name == "second" && failAfterSecond {
						return ran, errors.New("provider read timed out")
					}
				}
				return ran, nil
			}

			first := dispatchCtx(ctx, eventID, 1)
			ran, err := handler(first)
			Expect(err).To(MatchError("provider read timed out"))
			Expect(ran).To(Equal([]bool{true, true}))
			Expect(box.Completed(first, inbox.MustStep("spec.second"))).To(BeTrue())
			Expect(box.Completed(first, inbox.MustStep("spec.third"))).To(BeFalse())

			failAfterSecond = false
			retry := dispatchCtx(ctx, eventID, nextClaim(ctx, eventID))
			ran, err = handler(retry)
			Expect(err).NotTo(HaveOccurred())
			Expect(ran).To(Equal([]bool{false, false, true}))
			Expect(calls).To(Equal(map[string]int{"first": 1, "second": 1, "third": 1}))
			Expect(items(ctx)).To(Equal(map[string]int{"first": 1, "second": 1, "third": 1}))
			Expect(stepRows(ctx, eventID)).To(Equal([]string{"spec.first", "spec.second", "spec.third"}))
		})
	})

	When("a step fails part way", func() {
		It("rolls back its writes together with its step row", func(ctx SpecContext) {
			hctx := dispatchCtx(ctx, eventID, 1)
			boom := errors.New("mirror write refused")
			ran, err := box.Step(hctx, step, func(ctx context.Context, tx ports.Tx) error {
				if err := writeItem(ctx, tx, "partial"); err != nil {
					return err
				}
				return boom
			})
			Expect(err).To(MatchError(boom))
			Expect(ran).To(BeFalse())
			Expect(items(ctx)).To(BeEmpty())
			Expect(stepRows(ctx, eventID)).To(BeEmpty())
			Expect(box.Completed(hctx, step)).To(BeFalse())
		})
	})

	When("a loop's items come in another order on retry", func() {
		It("writes each item once, because steps are named by item id", func(ctx SpecContext) {
			calls := map[string]int{}
			failing := "c3"
			loop := func(ctx context.Context, order []string) error {
				for _, id := range order {
					s, err := inbox.NewStep("spec.item", id)
					Expect(err).NotTo(HaveOccurred())
					if _, err := box.Step(ctx, s, func(ctx context.Context, tx ports.Tx) error {
						calls[id]++
						if id == failing {
							return errors.New("commit details unavailable")
						}
						return writeItem(ctx, tx, id)
					}); err != nil {
						return err
					}
				}
				return nil
			}

			Expect(loop(dispatchCtx(ctx, eventID, 1), []string{"a1", "b2", "c3"})).NotTo(Succeed())
			failing = ""
			Expect(loop(dispatchCtx(ctx, eventID, nextClaim(ctx, eventID)), []string{"c3", "b2", "a1"})).To(Succeed())

			Expect(items(ctx)).To(Equal(map[string]int{"a1": 1, "b2": 1, "c3": 1}))
			Expect(calls).To(Equal(map[string]int{"a1": 1, "b2": 1, "c3": 2}))
			Expect(stepRows(ctx, eventID)).To(Equal([]string{"spec.item/a1", "spec.item/b2", "spec.item/c3"}))
		})
	})

	When("several dispatch goroutines run the same step at once", func() {
		It("commits it exactly once", func(ctx SpecContext) {
			const runners = 5
			hctx := dispatchCtx(ctx, eventID, 1)
			var (
				wg       sync.WaitGroup
				start    = make(chan struct{})
				returned atomic.Int32
				ran      [runners]bool
				errs     [runners]error
			)
			for i := range runners {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					defer returned.Add(1)
					<-start
					ran[i], errs[i] = box.Step(hctx, step, func(ctx context.Context, tx ports.Tx) error {
						if err := writeItem(ctx, tx, "shared"); err != nil {
							return err
						}
						// Hold this step open until every other runner has either given up or is
						// inside its own transaction waiting on a lock: the runs truly overlap.
						Eventually(func(g Gomega) {
							var waiting int32
							g.Expect(otherPool.QueryRow(ctx, `
								SELECT count(*) FROM pg_stat_activity
								WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)).To(Succeed())
							g.Expect(waiting + returned.Load()).To(BeNumerically(">=", runners-1))
						}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
						return nil
					})
				}()
			}
			close(start)
			wg.Wait()

			committed := 0
			for i := range runners {
				switch {
				case errs[i] == nil && ran[i]:
					committed++
				case errs[i] == nil:
				default:
					Expect(errs[i]).To(MatchError(inbox.ErrBusy))
				}
			}
			Expect(committed).To(Equal(1))
			Expect(items(ctx)).To(Equal(map[string]int{"shared": 1}))
			Expect(stepRows(ctx, eventID)).To(Equal([]string{step.String()}))
		})
	})

	When("a handler runs outside dispatch (a sync job)", func() {
		It("runs the step and records no step row", func(ctx SpecContext) {
			called := false
			ran, err := box.Step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
				called = true
				return writeItem(ctx, tx, "synced")
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(ran).To(BeTrue())
			Expect(called).To(BeTrue())
			Expect(items(ctx)).To(Equal(map[string]int{"synced": 1}))
			var steps int
			Expect(otherPool.QueryRow(ctx, `SELECT count(*) FROM provider_event_step`).Scan(&steps)).To(Succeed())
			Expect(steps).To(BeZero())
			Expect(box.Completed(ctx, step)).To(BeFalse())
		})
	})

	Describe("the transaction a mirror store writes through", func() {
		It("keeps commit and rollback with the inbox", func(ctx SpecContext) {
			ran, err := box.Step(dispatchCtx(ctx, eventID, 1), step, func(ctx context.Context, tx ports.Tx) error {
				ptx, err := sqlkit.PgxTx(tx)
				Expect(err).NotTo(HaveOccurred())
				Expect(ptx.Commit(ctx)).To(MatchError(sqlkit.ErrTxOwnedByInbox))
				Expect(ptx.Rollback(ctx)).To(MatchError(sqlkit.ErrTxOwnedByInbox))
				return writeItem(ctx, tx, "mirrored")
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(ran).To(BeTrue())
			Expect(items(ctx)).To(Equal(map[string]int{"mirrored": 1}))
		})

		It("is refused for a transaction the inbox did not open", func() {
			_, err := sqlkit.PgxTx(fakeTx{})
			Expect(err).To(MatchError(sqlkit.ErrForeignTx))
		})
	})
})

type fakeTx struct{}

func (fakeTx) DeletesOwnEvent() {}
