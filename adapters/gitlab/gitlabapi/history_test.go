package gitlabapi_test

import (
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = Describe("GitLab backfill list pages", func() {
	// queries records each request's query; link answers the Link header for a query.
	serve := func(link func(gl *fakeGitLab, q url.Values) string, queries *[]url.Values) *fakeGitLab {
		var gl *fakeGitLab
		gl = newFakeGitLab(func(w http.ResponseWriter, r *http.Request) {
			*queries = append(*queries, r.URL.Query())
			if l := link(gl, r.URL.Query()); l != "" {
				w.Header().Set("Link", l)
			}
			answer(http.StatusOK, `[{"id":1}]`)(w, r)
		})
		return gl
	}

	It("asks the first page as a keyset page and keeps the query of rel=\"next\" under the API root", func(ctx SpecContext) {
		var qs []url.Values
		gl := serve(func(gl *fakeGitLab, q url.Values) string {
			if q.Has("id_after") {
				return "" // the last page
			}
			return `<` + gl.URL + `/api/v4/projects/42/issues?id_after=9&pagination=keyset&per_page=100>; rel="next", <` +
				gl.URL + `/api/v4/projects/42/issues?pagination=keyset>; rel="first"`
		}, &qs)
		body, next, more, err := clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "issues", gitlabapi.Page{})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal(`[{"id":1}]`))
		Expect(more).To(BeTrue())
		Expect(next).To(Equal(gitlabapi.Page{Keyset: "id_after=9&pagination=keyset&per_page=100"}))
		Expect(qs[0].Get("pagination")).To(Equal("keyset"))
		Expect(qs[0].Get("per_page")).To(Equal("100"))
		Expect(qs[0].Has("page")).To(BeFalse())

		_, next, more, err = clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "issues", next)
		Expect(err).NotTo(HaveOccurred())
		Expect(more).To(BeFalse())
		Expect(next).To(BeZero())
		Expect(gl.received()[1].Path).To(Equal("/api/v4/projects/42/issues"))
		Expect(qs[1].Get("id_after")).To(Equal("9"))
		Expect(gl.received()[1].Token).To(Equal(token))
	})

	It("ends a list whose keyset answer has no rel=\"next\"", func(ctx SpecContext) {
		var qs []url.Values
		gl := serve(func(gl *fakeGitLab, q url.Values) string {
			return `<` + gl.URL + `/api/v4/groups/7/projects>; rel="first"`
		}, &qs)
		_, next, more, err := clientOf(gl).GroupProjectsPage(ctx, gitlabmodel.Access{}, 7, gitlabapi.Page{Keyset: "id_after=3&pagination=keyset"})
		Expect(err).NotTo(HaveOccurred())
		Expect(more).To(BeFalse())
		Expect(next).To(BeZero())
	})

	It("asks a group's projects with its subgroups, without shared projects, in id order", func(ctx SpecContext) {
		var qs []url.Values
		gl := serve(func(*fakeGitLab, url.Values) string { return "" }, &qs)
		_, _, _, err := clientOf(gl).GroupProjectsPage(ctx, gitlabmodel.Access{}, 7, gitlabapi.Page{})
		Expect(err).NotTo(HaveOccurred())
		Expect(gl.received()[0].Path).To(Equal("/api/v4/groups/7/projects"))
		Expect(qs[0]).To(Equal(url.Values{"include_subgroups": {"true"}, "with_shared": {"false"}, "order_by": {"id"},
			"sort": {"asc"}, "per_page": {"100"}, "pagination": {"keyset"}}))
	})

	DescribeTable("refuses a rel=\"next\" link that is not the same list under the API root as an unreadable page, without following it",
		func(ctx SpecContext, link func(base string) string) {
			var qs []url.Values
			gl := serve(func(gl *fakeGitLab, q url.Values) string { return `<` + link(gl.URL) + `>; rel="next"` }, &qs)
			_, _, _, err := clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "issues", gitlabapi.Page{})
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderUnreadable))
			Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
			Expect(gl.received()).To(HaveLen(1))
		},
		Entry("another host", func(base string) string {
			return strings.Replace(base, "127.0.0.1", "localhost", 1) + "/api/v4/projects/42/issues?id_after=9"
		}),
		Entry("another scheme", func(base string) string {
			return strings.Replace(base, "http://", "https://", 1) + "/api/v4/projects/42/issues?id_after=9"
		}),
		Entry("credentials", func(base string) string {
			return strings.Replace(base, "http://", "http://user:pw@", 1) + "/api/v4/projects/42/issues?id_after=9"
		}),
		Entry("another project", func(base string) string { return base + "/api/v4/projects/43/issues?id_after=9" }),
		Entry("another list", func(base string) string { return base + "/api/v4/projects/42/merge_requests?id_after=9" }),
		Entry("outside the API root", func(base string) string { return base + "/projects/42/issues?id_after=9" }),
		Entry("a relative link", func(string) string { return "/api/v4/projects/42/issues?id_after=9" }),
		Entry("no query", func(base string) string { return base + "/api/v4/projects/42/issues" }),
		Entry("the page just read", func(base string) string {
			return base + "/api/v4/projects/42/issues?order_by=created_at&pagination=keyset&per_page=100&scope=all&sort=asc&state=all"
		}),
	)

	It("reads the first page as an offset page where GitLab answers 405 to keyset, and goes on with X-Next-Page", func(ctx SpecContext) {
		var qs []url.Values
		gl := newFakeGitLab(func(w http.ResponseWriter, r *http.Request) {
			qs = append(qs, r.URL.Query())
			if r.URL.Query().Get("pagination") == "keyset" {
				answer(http.StatusMethodNotAllowed, `{"error":"Keyset pagination is not yet available for this type of request"}`)(w, r)
				return
			}
			w.Header().Set("X-Next-Page", "2")
			answer(http.StatusOK, `[]`)(w, r)
		})
		_, next, more, err := clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "merge_requests", gitlabapi.Page{})
		Expect(err).NotTo(HaveOccurred())
		Expect(more).To(BeTrue())
		Expect(next).To(Equal(gitlabapi.Page{Offset: 2}))
		Expect(qs).To(HaveLen(2))
		Expect(qs[1].Get("page")).To(Equal("1"))
		Expect(qs[1].Has("pagination")).To(BeFalse())
		Expect(qs[1].Has("state")).To(BeFalse())
	})

	It("refuses a 405 to a later keyset page rather than starting the list again", func(ctx SpecContext) {
		gl := newFakeGitLab(answer(http.StatusMethodNotAllowed, `{}`))
		_, _, _, err := clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "issues", gitlabapi.Page{Keyset: "id_after=9&pagination=keyset"})
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRefused))
		Expect(gl.received()).To(HaveLen(1))
	})

	It("goes on in offset pages where the server ignored pagination=keyset", func(ctx SpecContext) {
		gl := newFakeGitLab(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Next-Page", "2")
			answer(http.StatusOK, `[]`)(w, r)
		})
		_, next, more, err := clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "issues", gitlabapi.Page{})
		Expect(err).NotTo(HaveOccurred())
		Expect(more).To(BeTrue())
		Expect(next).To(Equal(gitlabapi.Page{Offset: 2}))

		gl = newFakeGitLab(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Next-Page", "")
			answer(http.StatusOK, `[]`)(w, r)
		})
		_, next, more, err = clientOf(gl).ProjectListPage(ctx, gitlabmodel.Access{}, 42, "issues", gitlabapi.Page{Offset: 3})
		Expect(err).NotTo(HaveOccurred())
		Expect(more).To(BeFalse())
		Expect(next).To(BeZero())
	})
})
