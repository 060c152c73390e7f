package deliveryinbox_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Steps claimed together", func() {
	var eventID int64
	names := []string{"a", "b", "c"}
	steps := make([]inbox.Step, len(names))
	for i, n := range names {
		s, err := inbox.NewStep("spec.item", n)
		if err != nil {
			panic(err)
		}
		steps[i] = s
	}
	// write writes the claimed items and records what was claimed.
	write := func(got *[]bool) func(ctx context.Context, tx ports.Tx, claimed []bool) error {
		return func(ctx context.Context, tx ports.Tx, claimed []bool) error {
			*got = claimed
			for i, c := range claimed {
				if c {
					if err := writeItem(ctx, tx, names[i]); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
	})

	It("commits every claimed step with the writes, in one transaction", func(ctx SpecContext) {
		var claimed []bool
		ran, err := box.Steps(dispatchCtx(ctx, eventID, 1), steps, write(&claimed))
		Expect(err).NotTo(HaveOccurred())
		Expect(ran).To(Equal(3))
		Expect(claimed).To(Equal([]bool{true, true, true}))
		Expect(items(ctx)).To(Equal(map[string]int{"a": 1, "b": 1, "c": 1}))
		Expect(stepRows(ctx, eventID)).To(Equal([]string{"spec.item/a", "spec.item/b", "spec.item/c"}))
	})

	When("a retry finds some of the steps committed", func() {
		It("claims only the others, and calls nothing when every step committed", func(ctx SpecContext) {
			_, err := box.Step(dispatchCtx(ctx, eventID, 1), steps[1], func(ctx context.Context, tx ports.Tx) error {
				return writeItem(ctx, tx, "b")
			})
			Expect(err).NotTo(HaveOccurred())

			retry := dispatchCtx(ctx, eventID, nextClaim(ctx, eventID))
			var claimed []bool
			ran, err := box.Steps(retry, steps, write(&claimed))
			Expect(err).NotTo(HaveOccurred())
			Expect(ran).To(Equal(2))
			Expect(claimed).To(Equal([]bool{true, false, true}))
			Expect(items(ctx)).To(Equal(map[string]int{"a": 1, "b": 1, "c": 1}))

			called := false
			ran, err = box.Steps(retry, steps, func(context.Context, ports.Tx, []bool) error { called = true; return nil })
			Expect(err).NotTo(HaveOccurred())
			Expect(ran).To(BeZero())
			Expect(called).To(BeFalse())
		})
	})

	It("claims a step named twice once", func(ctx SpecContext) {
		var claimed []bool
		ran, err := box.Steps(dispatchCtx(ctx, eventID, 1), []inbox.Step{steps[0], steps[1], steps[0]}, func(ctx context.Context, tx ports.Tx, c []bool) error {
			claimed = c
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(ran).To(Equal(2))
		Expect(claimed).To(Equal([]bool{true, true, false}))
	})

	When("the lease is taken back while the steps' writes run", func() {
		It("rolls every step and write back at commit", func(ctx SpecContext) {
			ran, err := box.Steps(dispatchCtx(ctx, eventID, 1), steps, func(ctx context.Context, tx ports.Tx, claimed []bool) error {
				if err := writeItem(ctx, tx, "a"); err != nil {
					return err
				}
				nextClaim(ctx, eventID)
				return writeItem(ctx, tx, "b")
			})
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(ran).To(BeZero())
			Expect(items(ctx)).To(BeEmpty())
			Expect(stepRows(ctx, eventID)).To(BeEmpty())
		})
	})

	When("a write fails", func() {
		It("rolls every step back with it", func(ctx SpecContext) {
			boom := errors.New("mirror write refused")
			ran, err := box.Steps(dispatchCtx(ctx, eventID, 1), steps, func(ctx context.Context, tx ports.Tx, claimed []bool) error {
				if err := writeItem(ctx, tx, "a"); err != nil {
					return err
				}
				return boom
			})
			Expect(err).To(MatchError(boom))
			Expect(ran).To(BeZero())
			Expect(items(ctx)).To(BeEmpty())
			Expect(stepRows(ctx, eventID)).To(BeEmpty())
		})
	})
})
