package tenancy_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// GitLab: any workspace ADMIN may create a GITLAB connection, and GitLab project and
// group ids are small sequential integers. A ("acme") owns project 7 and group 40; B ("globex")
// names them. A subscription is stored only after the connection's own API token read the
// resource (GET /projects/{id}, /groups/{id}), and a fake GitLab records which token read what.
var _ = Describe("A GitLab subscription is verified with the connection's own API token", func() {
	var (
		wsA, wsB int64
		adminB   string
		glA, glB int64
	)
	gitlabConnection := func(slug, token string, apiToken string) int64 {
		GinkgoHelper()
		body := map[string]any{"kind": "GITLAB", "sourceServerUrl": "https://gitlab.example", "config": map[string]any{"groupId": 40},
			"secret": "webhook-token-" + slug}
		if apiToken != "" {
			body["apiToken"] = apiToken
		}
		r := createConnection(slug, token, body)
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		return r.ID("id")
	}
	project := func(id string) map[string]any { return map[string]any{"type": "project", "id": id} }
	group := func(id string) map[string]any { return map[string]any{"type": "group", "id": id} }

	BeforeEach(func() {
		wsA, _ = workspace("acme")
		wsB, adminB = workspace("globex")
		fakeGitLab.grant("glpat-acme", "/projects/7")
		fakeGitLab.grant("glpat-acme", "/groups/40")
		fakeGitLab.grant("glpat-mallory", "/projects/8") // B's token reads B's own project only
		glA = gitlabConnection("acme", adminToken, "glpat-acme")
		glB = gitlabConnection("globex", adminB, "glpat-mallory")
	})

	It("stores the legitimate subscriptions VERIFIED, read with the subscriber's own token", func(ctx SpecContext) {
		r := subscribe("acme", adminToken, glA, project("7"), group("40"))
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.Raw).To(ContainSubstring(`"access":"VERIFIED"`))
		Expect(r.Raw).To(ContainSubstring(`"accessCheckedAt"`))
		Expect(subscribe("globex", adminB, glB, project("8")).Status).To(Equal(http.StatusOK))
		Expect(fakeGitLab.recorded()).To(ConsistOf(
			apiCall{Path: "/projects/7", Token: "glpat-acme"}, apiCall{Path: "/groups/40", Token: "glpat-acme"},
			apiCall{Path: "/projects/8", Token: "glpat-mallory"}))
		Expect(column(ctx, `SELECT resource_type || ':' || resource_id || ':' || access FROM connection_subscription WHERE workspace_id = $1 ORDER BY 1`, wsA)).
			To(Equal([]string{"group:40:VERIFIED", "project:7:VERIFIED"}))
	})

	DescribeTable("refuses another tenant's project or group id with 403 resource-not-accessible, reads it only with B's token, and stores nothing",
		func(ctx SpecContext, resource map[string]any) {
			r := subscribe("globex", adminB, glB, project("8"), resource)
			Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "resource-not-accessible"}))
			Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, wsB)).To(BeZero(),
				"nothing stored, not even B's own project of the same request")
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE workspace_id = $1`, wsB)).To(BeZero(), "no backfill queued")
			for _, c := range fakeGitLab.recorded() {
				Expect(c.Token).To(Equal("glpat-mallory"), "no other credential read anything for B: %+v", c)
			}
		},
		Entry("A's project", project("7")),
		Entry("A's group", group("40")),
	)

	It("refuses every subscription of a connection without an API token with 403, without calling GitLab", func(ctx SpecContext) {
		bare := gitlabConnection("globex", adminB, "")
		r := subscribe("globex", adminB, bare, project("8"))
		Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"error": "resource-not-accessible"}))
		Expect(fakeGitLab.recorded()).To(BeEmpty())
		Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE connection_id = $1`, bare)).To(BeZero())
		conn := call(http.MethodGet, "/api/workspaces/globex/connections", adminB, nil)
		Expect(conn.Raw).To(ContainSubstring(`"accessReason":"api-token-missing"`))
	})

	It("answers 503 retry with Retry-After and stores nothing when GitLab does not answer", func(ctx SpecContext) {
		fakeGitLab.force("/projects/8", http.StatusBadGateway)
		r := subscribe("globex", adminB, glB, project("8"))
		Expect(r.Status).To(Equal(http.StatusServiceUnavailable), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("error", "retry"))
		Expect(r.Header.Get("Retry-After")).NotTo(BeEmpty())
		Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, wsB)).To(BeZero())
	})

	DescribeTable("refuses ids that are not numbers with 400 and asks GitLab nothing",
		func(ctx SpecContext, resource map[string]any) {
			r := subscribe("globex", adminB, glB, resource)
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("error", "invalid-resource"))
			Expect(fakeGitLab.recorded()).To(BeEmpty())
		},
		Entry("a path", project("acme%2Fplans")),
		Entry("a negative id", group("-40")),
		Entry("a padded id", project("007")),
	)

	It("refuses an unknown resource type with 400", func() {
		r := subscribe("globex", adminB, glB, map[string]any{"type": "repository", "id": "8"})
		Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("error", "unknown-resource-type"))
	})

	It("checks the current subscriptions with a new API token and stores each verdict with it", func(ctx SpecContext) {
		Expect(subscribe("acme", adminToken, glA, project("7"), group("40")).Status).To(Equal(http.StatusOK))
		fakeGitLab.grant("glpat-acme-2", "/projects/7") // the new token no longer reads the group
		r := call(http.MethodPut, connectionPath("acme", glA, "api-token"), adminToken, map[string]any{"token": "glpat-acme-2"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.Raw).NotTo(ContainSubstring("glpat-acme-2"))
		Expect(column(ctx, `SELECT resource_type || ':' || access || ':' || coalesce(access_reason, '') FROM connection_subscription WHERE workspace_id = $1 ORDER BY 1`, wsA)).
			To(Equal([]string{"group:REVOKED:group-not-found", "project:VERIFIED:"}))
		Expect(fakeGitLab.recorded()).To(ContainElements(
			apiCall{Path: "/projects/7", Token: "glpat-acme-2"}, apiCall{Path: "/groups/40", Token: "glpat-acme-2"}))

		By("another workspace's ADMIN, or a MEMBER, cannot set it")
		member := member("acme", "mia", "MEMBER")
		Expect(call(http.MethodPut, connectionPath("acme", glA, "api-token"), member, map[string]any{"token": "x"}).Status).To(Equal(http.StatusForbidden))
		Expect(call(http.MethodPut, connectionPath("globex", glA, "api-token"), adminB, map[string]any{"token": "x"}).Status).To(Equal(http.StatusNotFound))
	})

	It("keeps its subscriptions' access when the webhook secret changes: only the API token checks them", func(ctx SpecContext) {
		Expect(subscribe("acme", adminToken, glA, project("7")).Status).To(Equal(http.StatusOK))
		r := call(http.MethodPut, connectionPath("acme", glA, "secret"), adminToken, map[string]any{"secret": "webhook-token-acme-2"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		for _, c := range fakeGitLab.recorded() {
			Expect(c.Token).To(Equal("glpat-acme"), "only the API token reads GitLab: %+v", c)
		}
		Expect(column(ctx, `SELECT resource_type || ':' || access FROM connection_subscription WHERE workspace_id = $1`, wsA)).
			To(Equal([]string{"project:VERIFIED"}))
	})

	It("is rechecked periodically with the connection's API token: access the token lost becomes REVOKED, a connection without a token is left alone", func(ctx SpecContext) {
		Expect(subscribe("acme", adminToken, glA, project("7")).Status).To(Equal(http.StatusOK))
		bare := gitlabConnection("globex", adminB, "")
		_, err := pool.Exec(ctx, `INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name, access, access_reason)
			VALUES ($1, $2, 'GITLAB', 'project', '8', '', 'UNVERIFIED', 'api-token-missing')`, bare, wsB)
		Expect(err).NotTo(HaveOccurred())
		fakeGitLab.reset()
		fakeGitLab.grant("glpat-acme", "/groups/40") // the token no longer reads project 7

		st, err := recheckServerOf(ctx, "server-1", gitlabChecker).RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Checked).To(Equal(1))
		Expect(st.Revoked).To(Equal(1))
		Expect(column(ctx, `SELECT access || ':' || coalesce(access_reason, '') FROM connection_subscription WHERE connection_id = $1`, glA)).
			To(Equal([]string{"REVOKED:project-not-found"}))
		Expect(column(ctx, `SELECT access FROM connection_subscription WHERE connection_id = $1`, bare)).To(Equal([]string{"UNVERIFIED"}))
		Expect(fakeGitLab.recorded()).To(Equal([]apiCall{{Path: "/projects/7", Token: "glpat-acme"}}))
	})
})
