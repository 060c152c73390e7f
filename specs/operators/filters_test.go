package operators_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Filtering dead letters", func() {
	It("narrows the list and its total by provider, event type and error class, each on its own and together", func(ctx SpecContext) {
		acme := newWorkspace(ctx, "acme")
		admin := newAccount(ctx, "ana", false, acme, "ADMIN")
		github := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Repo: "1"})
		gitlab := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Provider: "GITLAB", Repo: "2"})
		_, err := pool.Exec(ctx, `UPDATE provider_event SET event_type = 'merge_request', error_class = 'TRANSIENT:*net.OpError' WHERE id = $1`, gitlab)
		Expect(err).NotTo(HaveOccurred())

		ids := func(query string) []int64 {
			GinkgoHelper()
			r := call("GET", "/api/workspaces/acme/integration/dead-letters"+query, admin.Token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			var out []int64
			for _, it := range r.JSON["items"].([]any) {
				out = append(out, int64(it.(map[string]any)["id"].(float64)))
			}
			Expect(r.JSON).To(HaveKeyWithValue("total", BeNumerically("==", len(out))))
			return out
		}
		Expect(ids("")).To(ConsistOf(github, gitlab))
		Expect(ids("?provider=GITLAB")).To(ConsistOf(gitlab))
		Expect(ids("?provider=GITHUB")).To(ConsistOf(github))
		Expect(ids("?eventType=merge_request")).To(ConsistOf(gitlab))
		Expect(ids("?errorClass=PERMANENT%3A%2Ajson.SyntaxError")).To(ConsistOf(github))
		Expect(ids("?provider=GITLAB&eventType=issues")).To(BeEmpty())
	})

	It("refuses a provider this server does not run and a text that is no error class, naming the field", func(ctx SpecContext) {
		acme := newWorkspace(ctx, "acme")
		admin := newAccount(ctx, "ana", false, acme, "ADMIN")
		operator := newAccount(ctx, "ops", true, acme, "")
		insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})
		for _, c := range []struct{ path, token string }{
			{"/api/workspaces/acme/integration/dead-letters", admin.Token},
			{"/api/admin/integration/dead-letters", operator.Token},
		} {
			for query, field := range map[string]string{
				"?provider=BITBUCKET":              "provider",
				"?provider=github":                 "provider",
				"?errorClass=X":                    "errorClass",
				"?provider=GITHUB&errorClass=oops": "errorClass",
			} {
				r := call("GET", c.path+query, c.token, nil)
				Expect(r.Status).To(Equal(http.StatusBadRequest), c.path+query)
				Expect(r.JSON).To(Equal(map[string]any{"error": "invalid-filter", "field": field}), c.path+query)
			}
		}
	})
})
