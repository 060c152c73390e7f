package installflow_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The connection an install flow creates is published once, in the creation's transaction, as
// connection.state_changed with the connection as the management API answers it.
var _ = Describe("Install flows in the change feed", func() {
	var ana account
	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", "acme", "ADMIN")
	})

	feedOf := func(ctx context.Context, slug string) []change.Stored {
		GinkgoHelper()
		feed, err := changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
		ws := support.Scalar[int64](ctx, pool, `SELECT id FROM workspace WHERE slug = $1`, slug)
		cs, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		return cs
	}
	// listed is the connection as the management API lists it.
	listed := func(slug string, id int64) json.RawMessage {
		GinkgoHelper()
		r := a.do(http.MethodGet, "/api/workspaces/"+slug+"/connections", adminToken)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		var page struct{ Items []json.RawMessage }
		Expect(json.Unmarshal([]byte(r.Raw), &page)).To(Succeed())
		for _, item := range page.Items {
			var c struct{ ID int64 }
			Expect(json.Unmarshal(item, &c)).To(Succeed())
			if c.ID == id {
				return item
			}
		}
		Fail("connection " + strconv.FormatInt(id, 10) + " not listed: " + r.Raw)
		return nil
	}
	expectOneCreation := func(ctx context.Context) {
		GinkgoHelper()
		id := support.Scalar[int64](ctx, pool, `SELECT id FROM connection`)
		cs := feedOf(ctx, "acme")
		Expect(cs).To(HaveLen(1))
		Expect(cs[0].Type).To(Equal("connection.state_changed"))
		Expect(cs[0].Subject).To(Equal("connection:" + strconv.FormatInt(id, 10)))
		var data map[string]any
		Expect(json.Unmarshal(cs[0].Data, &data)).To(Succeed())
		Expect(data).To(HaveKeyWithValue("version", MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)),
			"a connection's version is the database clock at the change")
		delete(data, "version")
		Expect(json.Marshal(data)).To(MatchJSON(listed("acme", id)))
		Expect(string(cs[0].Data)).To(ContainSubstring(`"state": "ACTIVE"`))
		Expect(feedOf(ctx, "globex")).To(BeEmpty(), "another workspace's feed")
	}

	It("publishes one connection.state_changed for the App connection the GitHub setup URL creates, and nothing for a reused state", func(ctx SpecContext) {
		state := installURL(a, "github-app", "acme", ana.Token).Query().Get("state")
		expectPage(githubSetup(b, "1001", "code-ana", state), http.StatusOK, "connection was created")
		expectOneCreation(ctx)
		expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusBadRequest, "already used")
		Expect(feedOf(ctx, "acme")).To(HaveLen(1))
	})

	It("publishes one connection.state_changed for the SLACK connection the OAuth callback creates, and nothing when the team is already connected", func(ctx SpecContext) {
		expectPage(slackCallback(b, "slack-code", installURL(a, "slack", "acme", ana.Token).Query().Get("state")), http.StatusOK, "connection was created")
		expectOneCreation(ctx)
		expectPage(slackCallback(a, "slack-code", installURL(a, "slack", "acme", ana.Token).Query().Get("state")), http.StatusConflict, "already connected")
		Expect(feedOf(ctx, "acme")).To(HaveLen(1), "the refused creation rolled back with its change")
	})
})
