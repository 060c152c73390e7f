package changes_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The head of the feed is where the console's live page opens (LatestChanges).
var _ = Describe("The head of the change feed", func() {
	var (
		box       *deliveryinbox.Inbox
		feed      *changefeed.Store
		read      *changefeed.Store
		ws, other int64
	)

	BeforeEach(func(ctx SpecContext) {
		box, feed, read = writerAndReader()
		ws = support.Workspace(ctx, writerPool, "acme")
		other = support.Workspace(ctx, writerPool, "globex")
	})

	It("is the workspace's newest changes in cursor order, at most the limit, and another workspace's are not in it", func(ctx SpecContext) {
		for _, s := range []string{"a", "b", "c"} {
			Expect(publish(ctx, box, feed, ws, s, nil)).To(Succeed())
		}
		Expect(publish(ctx, box, feed, other, "theirs", nil)).To(Succeed())
		head, err := read.LatestChanges(ctx, ws, 2)
		Expect(err).NotTo(HaveOccurred())
		Expect(subjects(head)).To(Equal([]string{"b", "c"}))
		// Reading on from the head's last cursor finds nothing more: it is the newest.
		after, err := read.Changes(ctx, ws, head[1].Cursor, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(BeEmpty())
		empty, err := read.LatestChanges(ctx, support.Workspace(ctx, writerPool, "initech"), 50)
		Expect(err).NotTo(HaveOccurred())
		Expect(empty).To(BeEmpty())
	})

	When("a transaction that published first commits after a later one", func() {
		It("holds back the later change until the earlier commits, so following from the head skips neither", func(ctx SpecContext) {
			Expect(publish(ctx, box, feed, ws, "before", nil)).To(Succeed())
			commitSlow := slowThenFast(ctx, box, feed, ws)

			head, err := read.LatestChanges(ctx, ws, 50)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(head)).To(Equal([]string{"before"}), "fast is committed, but slow may still precede it")

			commitSlow()
			followed, err := read.Changes(ctx, ws, head[0].Cursor, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(followed)).To(Equal([]string{"slow", "fast"}))
			head, err = read.LatestChanges(ctx, ws, 50)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(head)).To(Equal([]string{"before", "slow", "fast"}))
		})
	})
})
