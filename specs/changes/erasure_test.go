package changes_test

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Person erasure of the change feed", func() {
	const (
		personID    = "21031067"
		personLogin = "Codertocat"
		personEmail = "21031067+Codertocat@users.noreply.github.com"
	)
	h := withHandlers(activeConnection("GITHUB_APP", "GITHUB", "https://github.com", `{"installationId":9001}`, "9001"), githubPublishing)

	issueBy := func(id, number int64, user obj, title string) obj {
		i := ghIssue(title, "2024-02-02T00:00:00Z")
		i["id"], i["number"], i["user"] = id, number, user
		return i
	}
	deliver := func(ctx context.Context, payload obj) {
		GinkgoHelper()
		d := support.LeasedEvent(ctx, writerPool, h.ws, github.Provider, "issues", "github:spec", ghBody(payload))
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		// The source header admission sets from the connection: start pairs the requested id
		// with the login these payloads carry (the issue view names its author by login only).
		_, err := writerPool.Exec(ctx, `UPDATE provider_event SET headers = jsonb_build_object('Hephaestus-Source-Server-Url', 'https://github.com') WHERE id = $1`, d.ID)
		Expect(err).NotTo(HaveOccurred())
	}
	publishAs := func(ctx context.Context, typ, subject string, data any) {
		GinkgoHelper()
		c, err := change.New(change.MustType(typ), subject, data)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.box.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
			return h.feed.Publish(ctx, tx, h.ws, c)
		})).To(Succeed())
	}
	page := func(ctx context.Context) []change.Stored {
		GinkgoHelper()
		cs, err := h.feed.Changes(ctx, h.ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		return cs
	}
	dataOf := func(cs []change.Stored, subject string) string {
		GinkgoHelper()
		for _, c := range cs {
			if c.Subject == subject {
				return string(c.Data)
			}
		}
		Fail("no change of " + subject)
		return ""
	}

	When("the feed holds changes naming the person and changes of other people", func() {
		BeforeEach(func(ctx SpecContext) {
			deliver(ctx, obj{"action": "opened", "issue": issueBy(3001, 1, ghUser(21031067, personLogin), "Crash"), "repository": ghRepo})
			deliver(ctx, obj{"action": "opened", "issue": issueBy(3002, 2, ghUser(7, "octocat"), "Hang"), "repository": ghRepo})
			// A view naming the person by e-mail only, in another case.
			publishAs(ctx, "github.commit.upserted", "github:commit:"+sha(1),
				obj{"sha": sha(1), "message": "fix", "author_email": "21031067+CODERTOCAT@users.noreply.github.com"})
			// Another provider's change with the same login: not this erasure's provider.
			publishAs(ctx, "gitlab.merge_request.upserted", "gitlab:merge_request:1", obj{"author": obj{"id": 5, "username": "codertocat"}})
		})

		It("replaces the data of the person's changes by a tombstone, keeping every change's cursor, order and the others' data", func(ctx SpecContext) {
			before := page(ctx)
			Expect(before).To(HaveLen(6), "the label and the repository the first issue brought, the two issues and the two changes published here")
			Expect(dataOf(before, "github:issue:3001")).To(ContainSubstring(personLogin))
			Expect(support.SearchTraces(ctx, writerPool, []string{"workspace_change"}, personID, personLogin, personEmail)).
				To(ContainElement(support.Trace{Table: "workspace_change", Column: "data", Value: personLogin}))
			others := dataOf(before, "github:issue:3002")
			gitlabData := dataOf(before, "gitlab:merge_request:1")

			s := support.ErasureStore(writerPool)
			scope, err := erasure.NewScope(github.Provider, "https://github.com", []erasure.Identity{identityOf(personID, "", personEmail)})
			Expect(err).NotTo(HaveOccurred())

			By("the preview counting the feed's matches after the mirror")
			matches, err := s.Preview(ctx, scope)
			Expect(err).NotTo(HaveOccurred())
			Expect(matches).To(HaveLen(4))
			Expect(matches[0].Store.String()).To(Equal("github-mirror"))
			Expect(matches[1].Store).To(Equal(erasure.ChangeFeed))
			Expect(matches[1].Store.String()).To(Equal("change-feed"))
			Expect(matches[1].Matches).To(Equal(int64(2)), "the issue (its author's login, paired with the id) and the commit (the e-mail in another case)")

			receipts := support.EraseNow(ctx, s, scope)
			stores := make([]string, len(receipts))
			for i, rc := range receipts {
				stores[i] = rc.Store.String()
			}
			Expect(stores).To(Equal([]string{"github-mirror", "change-feed", "workspace-inbox", "installation-inbox"}))
			Expect(receipts[1].Deleted).To(Equal(int64(2)))

			By("no trace of the person left in the feed of their provider")
			Expect(support.SearchTraces(ctx, writerPool, []string{"workspace_change"}, personID, personLogin, personEmail)).
				To(ConsistOf(support.Trace{Table: "workspace_change", Column: "data", Value: personLogin}),
					"only the other provider's change, whose erasure this is not")

			By("the feed still handing out every change with its cursor, in order")
			after := page(ctx)
			Expect(after).To(HaveLen(len(before)))
			for i := range before {
				Expect(after[i].ID).To(Equal(before[i].ID))
				Expect(after[i].Cursor).To(Equal(before[i].Cursor))
				Expect(after[i].Type).To(Equal(before[i].Type))
				Expect(after[i].Subject).To(Equal(before[i].Subject))
				Expect(after[i].OccurredAt).To(Equal(before[i].OccurredAt))
			}
			Expect(dataOf(after, "github:issue:3001")).To(MatchJSON(`{"erased":true}`))
			Expect(dataOf(after, "github:commit:"+sha(1))).To(MatchJSON(`{"erased":true}`))
			Expect(dataOf(after, "github:issue:3002")).To(MatchJSON(others))
			Expect(dataOf(after, "gitlab:merge_request:1")).To(MatchJSON(gitlabData))

			By("a repeated erasure finding nothing more in the feed")
			again := support.EraseNow(ctx, s, scope)
			Expect(again[1].Store).To(Equal(erasure.ChangeFeed))
			Expect(again[1].Deleted).To(BeZero())
		})
	})
})

var _ = Describe("Person erasure of the change feed, by the views' declaration", func() {
	It("erases a change whose view names the person only by a declared id member (GitLab's authorId), and not another person's", func(ctx SpecContext) {
		ws := support.Workspace(ctx, writerPool, "acme")
		_, err := writerPool.Exec(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url) VALUES ($1, 'GITLAB', 'GITLAB', 'https://gitlab.example.com')`, ws)
		Expect(err).NotTo(HaveOccurred())
		feed, err := changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		box, err := deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		publish := func(subject string, data string) {
			GinkgoHelper()
			c, err := change.New(change.MustType("gitlab.issue.upserted"), subject, json.RawMessage(data))
			Expect(err).NotTo(HaveOccurred())
			Expect(box.Write(ctx, func(ctx context.Context, tx ports.Tx) error { return feed.Publish(ctx, tx, ws, c) })).To(Succeed())
		}
		// The issue view as gitlabread shapes it: the author by numeric id only, in a project of
		// a group (no username anywhere in the data).
		publish("gitlab:issue:1", `{"id":9001,"projectId":101,"iid":1,"title":"Crash","state":"opened","authorId":4815162,"webUrl":"https://gitlab.example.com/acme/api/-/issues/1"}`)
		publish("gitlab:issue:2", `{"id":9002,"projectId":101,"iid":2,"title":"Hang","state":"opened","authorId":77,"webUrl":"https://gitlab.example.com/acme/api/-/issues/2"}`)

		scope, err := erasure.NewScope(gitlab.Provider, "https://gitlab.example.com", []erasure.Identity{identityOf("4815162", "", "")})
		Expect(err).NotTo(HaveOccurred())
		receipts := support.EraseNow(ctx, support.ErasureStore(writerPool), scope)
		Expect(receipts[1].Store).To(Equal(erasure.ChangeFeed))
		Expect(receipts[1].Deleted).To(Equal(int64(1)))
		cs, err := feed.Changes(ctx, ws, change.Cursor{}, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(cs).To(HaveLen(2))
		Expect(string(cs[0].Data)).To(MatchJSON(`{"erased":true}`))
		Expect(string(cs[1].Data)).To(ContainSubstring(`"authorId": 77`))
	})
})

func identityOf(id, login, email string) erasure.Identity {
	GinkgoHelper()
	i, err := erasure.NewIdentity(id, login, email)
	Expect(err).NotTo(HaveOccurred())
	return i
}
