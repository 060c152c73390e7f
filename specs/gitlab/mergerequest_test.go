package gitlab_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func mergeRequestPayload(projectID, id int64, iid int, title, updatedAt, detailed string) string {
	return fmt.Sprintf(`{"object_kind":"merge_request","project":{"id":%d,"name":"api",
		"path_with_namespace":"acme/api","web_url":"https://gitlab.example/acme/api"},
		"object_attributes":{"id":%d,"iid":%d,"target_project_id":%d,"title":%q,"state":"opened",
		"draft":false,"source_branch":"feature","target_branch":"main","merge_status":"can_be_merged",
		"detailed_merge_status":%q,"author_id":7,"url":"https://gitlab.example/acme/api/-/merge_requests/%d",
		"created_at":"2024-05-01 10:00:00 UTC","updated_at":%q,"last_commit":{"id":"abc123"}}}`,
		projectID, id, iid, projectID, title, detailed, iid, updatedAt)
}

var _ = Describe("GitLab merge request", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
	})

	When("the readiness write fails after the event write committed", func() {
		It("keeps the event write and the retry finishes only the readiness", func(ctx SpecContext) {
			reader.approvals.Store(1)
			mr := harness.Leased(ctx, ws, "Merge Request Hook", "gitlab:project:101",
				mergeRequestPayload(101, 9001, 5, "Add API", "2024-05-01 11:00:00 UTC", "mergeable"))
			faulty.failReadinessOnce(errInjected)

			Expect(mr.Attempt(ctx)).To(MatchError(errInjected))
			Expect(mr.Steps(ctx)).To(Equal([]string{"gitlab.merge_request.upsert", "gitlab.project.discover"}))
			Expect(harness.Column(ctx, `SELECT title FROM gitlab_merge_request WHERE workspace_id = $1`, ws)).To(Equal([]string{"Add API"}))
			Expect(harness.Column(ctx, `SELECT coalesce(ready::text, 'undecided') FROM gitlab_merge_request WHERE workspace_id = $1`, ws)).
				To(Equal([]string{"undecided"}))

			mr.ReleaseForRetry(ctx)
			Expect(mr.Attempt(ctx)).To(Succeed())
			Expect(mr.Steps(ctx)).To(Equal([]string{
				"gitlab.merge_request.readiness", "gitlab.merge_request.upsert", "gitlab.project.discover",
			}))
			Expect(harness.Column(ctx, `SELECT ready::text || ' ' || readiness_reason || ' ' || approvals_left
				FROM gitlab_merge_request WHERE workspace_id = $1`, ws)).To(Equal([]string{"false approvals-required 1"}))
			// The provider was read outside both steps, once per attempt that still needed it.
			Expect(reader.reads.Load()).To(BeEquivalentTo(2))

			mr.ReleaseForRetry(ctx)
			Expect(mr.Attempt(ctx)).To(Succeed())
			Expect(reader.reads.Load()).To(BeEquivalentTo(2), "a committed readiness step needs no provider read")
		})
	})

	It("never lets an older event overwrite a newer merge request", func(ctx SpecContext) {
		newer := harness.Leased(ctx, ws, "Merge Request Hook", "gitlab:project:101",
			mergeRequestPayload(101, 9001, 5, "Newer title", "2024-05-01 12:00:00 UTC", "mergeable"))
		older := harness.Leased(ctx, ws, "Merge Request Hook", "gitlab:project:101",
			mergeRequestPayload(101, 9001, 5, "Older title", "2024-05-01 11:00:00 UTC", "not_approved"))
		Expect(newer.Attempt(ctx)).To(Succeed())
		Expect(older.Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT title || ' ' || ready::text FROM gitlab_merge_request WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"Newer title true"}))
	})
})
