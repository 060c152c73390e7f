package management_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Setting a connection's subscriptions", func() {
	var id int64

	BeforeEach(func() {
		createWorkspace("acme")
		id = appConnection("acme", 1001)
	})

	version := func(ctx context.Context) int64 {
		GinkgoHelper()
		var v int64
		Expect(pool.QueryRow(ctx, `SELECT config_version FROM connection WHERE id = $1`, id).Scan(&v)).To(Succeed())
		return v
	}
	stored := func(ctx context.Context) []string {
		GinkgoHelper()
		return support.Column(ctx, pool, `
			SELECT resource_type || '/' || resource_id || '/' || name || '/' || provider || '/' || workspace_id
			FROM connection_subscription WHERE connection_id = $1 ORDER BY 1`, id)
	}
	put := func(resources ...map[string]any) response {
		GinkgoHelper()
		if resources == nil {
			resources = []map[string]any{}
		}
		return call(http.MethodPut, connectionPath("acme", id, "subscriptions"), adminToken, map[string]any{"resources": resources})
	}

	It("replaces the set, answers it, and bumps config_version with each change", func(ctx SpecContext) {
		before := version(ctx)
		r := put(map[string]any{"type": "repository", "id": "123", "name": "octo/hello"}, map[string]any{"type": "organization", "id": "9", "name": "octo"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"resources": []any{
			map[string]any{"type": "organization", "id": "9", "name": "octo", "access": "VERIFIED"},
			map[string]any{"type": "repository", "id": "123", "name": "octo/hello", "access": "VERIFIED"},
		}}))
		Expect(stored(ctx)).To(Equal([]string{"organization/9/octo/GITHUB/1", "repository/123/octo/hello/GITHUB/1"}))
		Expect(version(ctx)).To(Equal(before + 1))

		r = put(map[string]any{"type": "repository", "id": "456", "name": "octo/world"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(stored(ctx)).To(Equal([]string{"repository/456/octo/world/GITHUB/1"}))
		Expect(version(ctx)).To(Equal(before + 2))

		r = put()
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"resources": []any{}}))
		Expect(stored(ctx)).To(BeEmpty())
		Expect(version(ctx)).To(Equal(before + 3))
	})

	It("answers 400 to a resource type its provider module does not list, and keeps the set and version", func(ctx SpecContext) {
		Expect(put(map[string]any{"type": "repository", "id": "123"}).Status).To(Equal(http.StatusOK))
		before := version(ctx)
		r := put(map[string]any{"type": "repository", "id": "456"}, map[string]any{"type": "channel", "id": "C1"})
		Expect(r.Status).To(Equal(http.StatusBadRequest))
		Expect(r.JSON).To(Equal(map[string]any{"error": "unknown-resource-type"}))
		Expect(stored(ctx)).To(Equal([]string{"repository/123//GITHUB/1"}))
		Expect(version(ctx)).To(Equal(before))
	})

	It("answers 400 to a body without resources instead of clearing the set", func(ctx SpecContext) {
		Expect(put(map[string]any{"type": "repository", "id": "123"}).Status).To(Equal(http.StatusOK))
		r := call(http.MethodPut, connectionPath("acme", id, "subscriptions"), adminToken, map[string]any{})
		Expect(r.Status).To(Equal(http.StatusBadRequest))
		Expect(stored(ctx)).To(HaveLen(1))
	})

	It("answers 400 to a resource without id or listed twice", func() {
		Expect(put(map[string]any{"type": "repository", "id": ""}).JSON).To(Equal(map[string]any{"error": "invalid-resource"}))
		Expect(put(map[string]any{"type": "repository", "id": "1"}, map[string]any{"type": "repository", "id": "1"}).JSON).
			To(Equal(map[string]any{"error": "duplicate-resource"}))
	})
})
