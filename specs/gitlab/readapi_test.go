package gitlab_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("GitLab read API", func() {
	var (
		acme, other int64
		member      string
	)

	BeforeEach(func(ctx SpecContext) {
		acme = harness.NewWorkspace(ctx, "acme")
		other = harness.NewWorkspace(ctx, "other")
		member = harness.NewAccount(ctx, "mia", "acme", "MEMBER")
		for _, sql := range []string{
			`INSERT INTO gitlab_project (workspace_id, id, name, path_with_namespace, deleted, source_updated_at, source_event_id)
			 VALUES ($1, 101, 'api', 'acme/api', false, now(), 1), ($1, 102, 'web', 'acme/web', false, now(), 1),
			        ($1, 103, 'cli', 'acme/cli', false, now(), 1), ($1, 104, 'gone', 'acme/gone', true, now(), 1),
			        ($2, 777, 'secret', 'other/secret', false, now(), 1)`,
			`INSERT INTO gitlab_merge_request (workspace_id, id, project_id, iid, title, state, source_updated_at, source_event_id, ready, readiness_reason)
			 VALUES ($1, 1, 101, 1, 'first', 'merged', '2024-05-01T10:00:00Z', 1, false, 'not-open'),
			        ($1, 2, 101, 2, 'second', 'opened', '2024-05-02T10:00:00Z', 1, true, ''),
			        ($1, 3, 101, 3, 'third', 'opened', '-infinity', 1, NULL, ''),
			        ($2, 4, 777, 1, 'hidden', 'opened', now(), 1, NULL, '')`,
		} {
			_, err := harness.Pool.Exec(ctx, sql, acme, other)
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("pages the workspace's projects for a member, without tombstones or other workspaces' projects", func() {
		first := harness.Get("/api/workspaces/acme/gitlab/projects?page=0&size=2", member)
		Expect(first.Status).To(Equal(200))
		Expect(first.JSON).To(HaveKeyWithValue("total", BeEquivalentTo(3)))
		Expect(first.JSON).To(HaveKeyWithValue("page", BeEquivalentTo(0)))
		Expect(first.JSON).To(HaveKeyWithValue("size", BeEquivalentTo(2)))
		Expect(first.JSON["items"]).To(HaveLen(2))
		Expect(first.JSON["items"].([]any)[0]).To(HaveKeyWithValue("pathWithNamespace", "acme/api"))

		second := harness.Get("/api/workspaces/acme/gitlab/projects?page=1&size=2", member)
		Expect(second.JSON["items"]).To(ConsistOf(HaveKeyWithValue("pathWithNamespace", "acme/web")))
	})

	It("pages a project's merge requests, newest first, with their readiness", func() {
		r := harness.Get("/api/workspaces/acme/gitlab/projects/101/merge-requests?size=2", member)
		Expect(r.Status).To(Equal(200))
		Expect(r.JSON).To(HaveKeyWithValue("total", BeEquivalentTo(3)))
		items := r.JSON["items"].([]any)
		Expect(items).To(HaveLen(2))
		Expect(items[0]).To(And(HaveKeyWithValue("iid", BeEquivalentTo(3)), HaveKeyWithValue("ready", BeNil()),
			HaveKeyWithValue("updatedAt", BeNil())))
		Expect(items[1]).To(And(HaveKeyWithValue("iid", BeEquivalentTo(2)), HaveKeyWithValue("ready", true),
			HaveKeyWithValue("updatedAt", "2024-05-02T10:00:00Z")))
	})

	It("answers 404 for another workspace's project", func() {
		r := harness.Get("/api/workspaces/acme/gitlab/projects/777/merge-requests", member)
		Expect(r.Status).To(Equal(404))
		Expect(r.JSON).To(Equal(map[string]any{"error": "not-found"}))
	})

	It("refuses a page size over the limit", func() {
		r := harness.Get("/api/workspaces/acme/gitlab/projects?size=201", member)
		Expect(r.Status).To(Equal(400))
	})
})
