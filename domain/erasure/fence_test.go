package erasure_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

func TestErasure(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Erasure domain")
}

var _ = Describe("ErasureFence", func() {
	var fence erasure.Fence
	held := erasure.Observation{EventExists: true, State: inbox.Leased, Epoch: 3}

	BeforeEach(func() {
		var err error
		fence, err = erasure.NewFence(11, 3)
		Expect(err).NotTo(HaveOccurred())
	})

	It("lets a write commit while the event is leased under the same epoch", func() {
		Expect(fence.Check(held)).To(Succeed())
	})

	It("stops further writes once the event is missing", func() {
		o := held
		o.EventExists = false
		Expect(fence.Check(o)).To(MatchError(inbox.ErrErased))
	})

	It("refuses a write while erasure is in progress, as contention to retry rather than wait on", func() {
		o := held
		o.ErasureInProgress = true
		err := fence.Check(o)
		Expect(err).To(MatchError(inbox.ErrBusy))
		Expect(inbox.Classify(err)).To(Equal(inbox.Contention))
	})

	It("tells a busy event row from a deleted one", func() {
		o := held
		o.EventBusy = true
		Expect(fence.Check(o)).To(MatchError(inbox.ErrBusy))
		o.EventExists = false
		Expect(fence.Check(o)).To(MatchError(inbox.ErrErased))
	})

	It("refuses a write when a workspace operation holds the workspace", func() {
		o := held
		o.WorkspaceBusy = true
		Expect(fence.Check(o)).To(MatchError(inbox.ErrBusy))
	})

	It("refuses a write under a replaced lease", func() {
		o := held
		o.Epoch = 4
		Expect(fence.Check(o)).To(MatchError(inbox.ErrLeaseLost))
		o = held
		o.State = inbox.Queued
		Expect(fence.Check(o)).To(MatchError(inbox.ErrLeaseLost))
	})

	It("needs an event and an epoch", func() {
		_, err := erasure.NewFence(0, 1)
		Expect(err).To(HaveOccurred())
		_, err = erasure.NewFence(1, 0)
		Expect(err).To(HaveOccurred())
	})
})
