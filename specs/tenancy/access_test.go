package tenancy_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Verifying a PAT subscription with the token", func() {
	var (
		wsB    int64
		adminB string
		pat    int64
	)

	BeforeEach(func() {
		wsB, adminB = workspace("globex")
		fakeGitHub.grant("ghp_token", repoOfA)
		r := patConnection("globex", adminB, "ghp_token")
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		pat = r.ID("id")
	})

	DescribeTable("maps the provider's answer, and stores nothing unless it admits",
		func(ctx SpecContext, status int, header http.Header, wantStatus int, wantError string) {
			fakeGitHub.force(repoOfA, status, header)
			r := subscribe("globex", adminB, pat, repository(repoOfA))
			Expect(r.Status).To(Equal(wantStatus), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": wantError}))
			if wantStatus == http.StatusServiceUnavailable {
				Expect(r.Header.Get("Retry-After")).NotTo(BeEmpty())
			}
			Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, wsB)).To(BeZero())
			Expect(fakeGitHub.recorded()).To(ContainElement(apiCall{Path: "/repositories/500", Token: "ghp_token"}))
		},
		Entry("401", http.StatusUnauthorized, nil, http.StatusForbidden, "resource-not-accessible"),
		Entry("403", http.StatusForbidden, nil, http.StatusForbidden, "resource-not-accessible"),
		Entry("404", http.StatusNotFound, nil, http.StatusForbidden, "resource-not-accessible"),
		Entry("no answer", -1, nil, http.StatusServiceUnavailable, "retry"),
		Entry("a server error", http.StatusBadGateway, nil, http.StatusServiceUnavailable, "retry"),
		Entry("a rate limit (403 with X-RateLimit-Remaining: 0)", http.StatusForbidden,
			http.Header{"X-Ratelimit-Remaining": {"0"}}, http.StatusServiceUnavailable, "retry"),
		Entry("a secondary rate limit (429 with Retry-After)", http.StatusTooManyRequests,
			http.Header{"Retry-After": {"60"}}, http.StatusServiceUnavailable, "retry"),
	)

	It("refuses a 200 for another repository", func(ctx SpecContext) {
		fakeGitHub.answerFor(repoOfA, 501)
		r := subscribe("globex", adminB, pat, repository(repoOfA))
		Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
		Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, wsB)).To(BeZero())
	})

	It("refuses the whole set when one repository is not readable, keeping the previous set", func(ctx SpecContext) {
		Expect(subscribe("globex", adminB, pat, repository(repoOfA)).Status).To(Equal(http.StatusOK))
		r := subscribe("globex", adminB, pat, repository(repoOfA), repository(999))
		Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
		Expect(column(ctx, `SELECT resource_id || ':' || access FROM connection_subscription WHERE workspace_id = $1`, wsB)).
			To(Equal([]string{"500:VERIFIED"}))
	})

	It("answers 400 unsupported-resource for an organization, and checks nothing", func() {
		r := subscribe("globex", adminB, pat, map[string]any{"type": "organization", "id": "1"})
		Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"error": "unsupported-resource"}))
		Expect(fakeGitHub.recorded()).To(BeEmpty())
	})

	DescribeTable("answers 400 to resources that can never match a delivery",
		func(kind string, resource map[string]any, wantError string) {
			var id int64
			switch kind {
			case "GITHUB_PAT":
				id = pat
			case "GITLAB":
				r := createConnection("globex", adminB, map[string]any{"kind": "GITLAB", "sourceServerUrl": "https://gitlab.example.com",
					"config": map[string]any{"groupId": 42}, "secret": "gitlab-token"})
				Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
				id = r.ID("id")
			}
			r := subscribe("globex", adminB, id, resource)
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": wantError}))
			Expect(fakeGitHub.recorded()).To(BeEmpty())
		},
		Entry("a GitHub repository id that is no number", "GITHUB_PAT", map[string]any{"type": "repository", "id": "acme/secret"}, "invalid-resource"),
		Entry("a GitHub repository id with a leading zero", "GITHUB_PAT", map[string]any{"type": "repository", "id": "0500"}, "invalid-resource"),
		Entry("a GitHub resource type that does not exist", "GITHUB_PAT", map[string]any{"type": "gist", "id": "1"}, "unknown-resource-type"),
		Entry("a GitLab project id that is no number", "GITLAB", map[string]any{"type": "project", "id": "group/project"}, "invalid-resource"),
		Entry("a GitLab group id that is negative", "GITLAB", map[string]any{"type": "group", "id": "-4"}, "invalid-resource"),
	)

	Describe("who may read a connection's subscriptions", func() {
		It("lets the workspace's ADMINs and the instance administrator, no one else", func() {
			Expect(subscribe("globex", adminB, pat, repository(repoOfA)).Status).To(Equal(http.StatusOK))
			path := subscriptionsPath("globex", pat)
			memberB := member("globex", "globex-member", "MEMBER")
			_, adminA := workspace("acme")

			Expect(call(http.MethodGet, path, "", nil).Status).To(Equal(http.StatusUnauthorized))
			Expect(call(http.MethodGet, path, "hx_not-a-token", nil).Status).To(Equal(http.StatusUnauthorized))
			Expect(call(http.MethodGet, path, memberB, nil).Status).To(Equal(http.StatusForbidden))
			Expect(call(http.MethodGet, path, adminA, nil).Status).To(Equal(http.StatusForbidden))
			Expect(call(http.MethodGet, subscriptionsPath("acme", pat), adminA, nil).Status).To(Equal(http.StatusNotFound))
			for _, token := range []string{adminB, adminToken} {
				r := call(http.MethodGet, path, token, nil)
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				Expect(r.JSON["resources"]).To(ConsistOf(HaveKeyWithValue("access", "VERIFIED")))
			}
		})
	})

	It("never shows or logs the token", func() {
		r := call(http.MethodGet, "/api/workspaces/globex/connections", adminB, nil)
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Raw).NotTo(ContainSubstring("ghp_token"))
		r = subscribe("globex", adminB, pat, repository(404))
		Expect(r.Raw).NotTo(ContainSubstring("ghp_token"))
	})
})
