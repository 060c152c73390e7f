package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
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

	It("opens at the newest change, newest first, and reloads itself without a script, so new changes appear", func(ctx SpecContext) {
		// More changes than a page holds: the head shows the newest, not the oldest kept.
		for i := 1; i <= 55; i++ {
			publish(ctx, f.acme.ID, fmt.Sprintf("github:issue:%d", i), fmt.Sprintf("Crash number %d.", i))
		}
		member := newAccount(ctx, "acme", "MEMBER")
		b := newClient()
		b.signIn(member)

		a := b.get("/console/workspaces/acme/changes")
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		Expect(a.Body).To(ContainSubstring("github.issue.upserted"))
		newest, older := strings.Index(a.Body, "Crash number 55."), strings.Index(a.Body, "Crash number 54.")
		Expect(newest).To(BeNumerically(">", 0))
		Expect(older).To(BeNumerically(">", newest), "newest first")
		Expect(a.Body).To(ContainSubstring("Crash number 6."))
		Expect(a.Body).NotTo(ContainSubstring("Crash number 5."), "a page of 50")
		Expect(a.Body).To(ContainSubstring(`<meta http-equiv="refresh" content="5">`))
		Expect(a.Body).NotTo(ContainSubstring("<script"))

		// The reload shows a change committed since.
		publish(ctx, f.acme.ID, "github:issue:56", "Crash number 56.")
		again := b.get("/console/workspaces/acme/changes")
		Expect(strings.Index(again.Body, "Crash number 56.")).To(BeNumerically("<", strings.Index(again.Body, "Crash number 55.")))
	})

	It("follows from the newest change shown by cursor, in feed order, and pages from the oldest change kept", func(ctx SpecContext) {
		publish(ctx, f.acme.ID, "github:issue:1", "First crash")
		publish(ctx, f.acme.ID, "github:issue:2", "Second crash")
		member := newAccount(ctx, "acme", "MEMBER")
		b := newClient()
		b.signIn(member)

		head := b.get("/console/workspaces/acme/changes")
		follow := regexp.MustCompile(`id="follow" href="\?after=([0-9-]+)"`).FindStringSubmatch(head.Body)
		Expect(follow).To(HaveLen(2))
		page, err := feed.ReadAs(ctx, ports.FeedReader{WorkspaceID: f.acme.ID, Principal: support.InstanceAdmin}, change.Cursor{}, 2, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(follow[1]).To(Equal(page[1].Cursor.String()), "the cursor of the newest change")

		publish(ctx, f.acme.ID, "github:issue:3", "Third crash")
		publish(ctx, f.acme.ID, "github:issue:4", "Fourth crash")
		followed := b.get("/console/workspaces/acme/changes?after=" + follow[1])
		Expect(followed.Status).To(Equal(http.StatusOK))
		Expect(followed.Body).NotTo(ContainSubstring("Second crash"))
		third, fourth := strings.Index(followed.Body, "Third crash"), strings.Index(followed.Body, "Fourth crash")
		Expect(third).To(BeNumerically(">", 0))
		Expect(fourth).To(BeNumerically(">", third), "feed order")
		Expect(followed.Body).To(ContainSubstring(`<meta http-equiv="refresh" content="5">`))

		oldest := b.get("/console/workspaces/acme/changes?after=0-0")
		Expect(oldest.Status).To(Equal(http.StatusOK))
		Expect(strings.Index(oldest.Body, "First crash")).To(BeNumerically("<", strings.Index(oldest.Body, "Second crash")))
		Expect(oldest.Body).To(ContainSubstring("Fourth crash"))
	})

	It("shows a MEMBER a connection's change without what only ADMINs see, and an ADMIN the whole, on the head and when following", func(ctx SpecContext) {
		store, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		box, err := deliveryinbox.New(pool)
		Expect(err).NotTo(HaveOccurred())
		c, err := change.New(change.ConnectionStateChanged, "connection:9", map[string]any{
			"id": 9, "kind": "SLACK", "provider": "SLACK", "state": "SUSPENDED", "sourceServerUrl": "https://slack.com",
			"config": map[string]string{"teamId": "T0TEAMSECRET", "appId": "A0APPSECRET"}, "webhookUrl": "/webhooks/x/9",
			"hasApiToken": true, "access": "UNVERIFIED", "accessReason": "token-missing"})
		Expect(err).NotTo(HaveOccurred())
		Expect(box.Write(ctx, func(ctx context.Context, tx ports.Tx) error { return store.Publish(ctx, tx, f.acme.ID, c) })).To(Succeed())
		member := newClient()
		member.signIn(newAccount(ctx, "acme", "MEMBER"))
		admin := newClient()
		admin.signIn(f.ana.Token)

		for _, path := range []string{"/console/workspaces/acme/changes", "/console/workspaces/acme/changes?after=0-0"} {
			m := member.get(path)
			Expect(m.Status).To(Equal(http.StatusOK))
			Expect(m.Body).To(SatisfyAll(ContainSubstring("connection.state_changed"), ContainSubstring("SUSPENDED")))
			for _, hidden := range []string{"T0TEAMSECRET", "A0APPSECRET", "webhookUrl", "hasApiToken", "accessReason", "token-missing", "slack.com"} {
				Expect(m.Body).NotTo(ContainSubstring(hidden), path)
			}
			a := admin.get(path)
			Expect(a.Status).To(Equal(http.StatusOK))
			Expect(a.Body).To(SatisfyAll(ContainSubstring("T0TEAMSECRET"), ContainSubstring("webhookUrl"), ContainSubstring("token-missing")), path)
		}
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
		Expect(a.Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces%2Facme%2Fchanges"))
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
