package management_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Input PostgreSQL would refuse in a text or jsonb column is answered 400 before any statement
// runs, never 500.
var _ = Describe("Input PostgreSQL would refuse", func() {
	It("answers 400 to a NUL in a workspace name and stores nothing", func(ctx SpecContext) {
		r := call(http.MethodPost, "/api/admin/workspaces", adminToken, `{"slug":"acme","name":"Ac\u0000me"}`)
		Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"error": "nul"}))
		Expect(count(ctx, `SELECT count(*) FROM workspace WHERE slug = 'acme'`)).To(Equal(0))
	})

	It("answers 400 to invalid UTF-8 in a workspace name", func() {
		r := call(http.MethodPost, "/api/admin/workspaces", adminToken, "{\"slug\":\"acme\",\"name\":\"Ac\xffme\"}")
		Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
	})

	When("a connection is created", func() {
		BeforeEach(func() { createWorkspace("acme") })

		DescribeTable("answers 400 to what its text or jsonb columns cannot hold",
			func(ctx SpecContext, body, code string) {
				r := call(http.MethodPost, "/api/workspaces/acme/connections", adminToken, body)
				Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
				Expect(r.JSON).To(Equal(map[string]any{"error": code}))
				Expect(count(ctx, `SELECT count(*) FROM connection`)).To(Equal(0))
			},
			Entry("a NUL in the source URL", `{"kind":"OUTLINE","sourceServerUrl":"https://docs.example.com/\u0000","config":{},"secret":"s3cret-s3cret"}`, "nul"),
			Entry("a NUL in a config value (jsonb)", `{"kind":"GITLAB","sourceServerUrl":"https://gitlab.example.com","config":{"groupId":42,"note":"a\u0000b"},"secret":"tok"}`, "nul"),
			Entry("a NUL in the secret", `{"kind":"OUTLINE","sourceServerUrl":"https://docs.example.com","config":{},"secret":"s3cret\u0000"}`, "nul"),
			Entry("a lone surrogate in a config value", `{"kind":"GITLAB","sourceServerUrl":"https://gitlab.example.com","config":{"groupId":42,"note":"\ud800"},"secret":"tok"}`, "invalid-escape"),
		)
	})
})
