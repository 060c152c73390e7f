package changes_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// A fenced step's publications travel with its COMMIT; what the step does after
// publishing must still see them, in the order it wrote them.
var _ = Describe("Publications that travel with a step's commit", func() {
	It("are removed by a teardown later in the same step, as if they had been written at once", func(ctx SpecContext) {
		ws := support.Workspace(ctx, writerPool, "acme")
		box, feed := writer()
		d := support.LeasedEvent(ctx, writerPool, ws, github.Provider, "issues", "github:spec", `{}`)
		hctx, _ := d.Dispatch(ctx)

		ran, err := box.Step(hctx, inbox.MustStep("spec.publish_then_remove"), func(ctx context.Context, tx ports.Tx) error {
			c, err := change.New(change.MustType("github.issue.upserted"), "github:issue:1", map[string]string{"title": "before the teardown"})
			if err != nil {
				return err
			}
			if err := feed.Publish(ctx, tx, ws, c); err != nil {
				return err
			}
			_, err = feed.RemoveChanges(ctx, tx, ws, ports.ChangeSelection{TypePrefix: "github.", All: true})
			return err
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(ran).To(BeTrue())

		page, err := feed.Changes(ctx, ws, change.Cursor{}, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(page).To(HaveLen(1))
		Expect(string(page[0].Data)).NotTo(ContainSubstring("before the teardown"),
			"the teardown removed the change its own step published")
	})
})
