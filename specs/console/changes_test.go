package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("The console's change feed page", func() {
	var f fixture

	// publish commits one change of ws as a mirror write does.
	publish := func(ctx context.Context, ws int64, subject, title string) {
		GinkgoHelper()
		box, err := deliveryinbox.New(pool)
		Expect(err).NotTo(HaveOccurred())
		store, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		c, err := change.New(change.MustType("github.issue.upserted"), subject, map[string]string{"title": title})
		Expect(err).NotTo(HaveOccurred())
		Expect(box.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
			return store.Publish(ctx, tx, ws, c)
		})).To(Succeed())
	}

	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
	})

	It("shows a member the workspace's changes in feed order, reloads itself without a script, and pages by cursor", func(ctx SpecContext) {
		publish(ctx, f.acme.ID, "github:issue:1", "First crash")
		publish(ctx, f.acme.ID, "github:issue:2", "Second crash")
		member := newAccount(ctx, "acme", "MEMBER")
		b := newClient()
		b.signIn(member)

		a := b.get("/console/workspaces/acme/changes")
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		Expect(a.Body).To(ContainSubstring("github.issue.upserted"))
		first, second := strings.Index(a.Body, "First crash"), strings.Index(a.Body, "Second crash")
		Expect(first).To(BeNumerically(">", 0))
		Expect(second).To(BeNumerically(">", first), "feed order")
		Expect(a.Body).To(ContainSubstring(`<meta http-equiv="refresh" content="5">`))
		Expect(a.Body).NotTo(ContainSubstring("<script"))

		// "Newer changes" moves the cursor past what the page showed.
		page, err := feed.Read(ctx, f.acme.ID, change.Cursor{}, 1, 0)
		Expect(err).NotTo(HaveOccurred())
		next := b.get(fmt.Sprintf("/console/workspaces/acme/changes?after=%s", page[0].Cursor))
		Expect(next.Status).To(Equal(http.StatusOK))
		Expect(next.Body).NotTo(ContainSubstring("First crash"))
		Expect(next.Body).To(ContainSubstring("Second crash"))
	})

	It("refuses a member of another workspace with 403 and shows none of the changes", func(ctx SpecContext) {
		publish(ctx, f.acme.ID, "github:issue:1", "Private crash")
		o := newClient()
		o.signIn(f.olga.Token)
		a := o.get("/console/workspaces/acme/changes")
		Expect(a.Status).To(Equal(http.StatusForbidden))
		Expect(a.Body).NotTo(ContainSubstring("Private crash"))
	})

	It("sends a reader without a session to the sign-in form", func() {
		a := newClient().get("/console/workspaces/acme/changes")
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(a.Location).To(HavePrefix("/console/sign-in"))
	})

	It("answers a cursor the feed never handed out with 400", func() {
		b := newClient()
		b.signIn(f.ana.Token)
		Expect(b.get("/console/workspaces/acme/changes?after=not-a-cursor").Status).To(Equal(http.StatusBadRequest))
	})
})

// newAccount makes an account with role in workspace slug and answers its token.
func newAccount(ctx context.Context, slug, role string) string {
	GinkgoHelper()
	n := logins.Add(1)
	return support.NewAccount(ctx, svc, fmt.Sprintf("member%d", n), false, slug, role).Token
}
