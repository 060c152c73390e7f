package gitlab_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

const (
	shaA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"
	shaB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2"
	shaC = "ccccccccccccccccccccccccccccccccccccccc3"
)

func pushPayload(projectID int64, shas ...string) string {
	commits := ""
	for i, sha := range shas {
		if i > 0 {
			commits += ","
		}
		commits += fmt.Sprintf(`{"id":%q,"message":"change %d\n\nbody","title":"change %d",
			"timestamp":"2024-05-01T10:0%d:00+02:00","url":"https://gitlab.example/c/%s",
			"author":{"name":"Ana","email":"ana@example.com"}}`, sha, i, i, i, sha)
	}
	return fmt.Sprintf(`{"object_kind":"push","before":"0000000000000000000000000000000000000000",
		"after":%q,"ref":"refs/heads/main","user_id":7,"project_id":%d,
		"project":{"id":%d,"name":"api","namespace_id":42,"path_with_namespace":"acme/api",
		"web_url":"https://gitlab.example/acme/api","default_branch":"main","visibility_level":0},
		"commits":[%s],"total_commits_count":%d}`, shas[len(shas)-1], projectID, projectID, commits, len(shas))
}

var _ = Describe("GitLab push", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = harness.NewWorkspace(ctx, "acme")
	})

	When("one commit's write fails", func() {
		It("rolls back that commit's step, writes the others, and the retry writes the missing commit once", func(ctx SpecContext) {
			push := harness.Leased(ctx, ws, "Push Hook", "gitlab:project:101", pushPayload(101, shaA, shaB, shaC))
			// B fails in the commits' shared transaction and again in its own step.
			faulty.failCommitTimes(shaB, errInjected, 2)

			err := push.Attempt(ctx)
			Expect(err).To(MatchError(errInjected), "the delivery must fail so that it is retried")
			Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
			// The loop went on past the failing commit: A and C committed, B rolled back.
			Expect(push.Steps(ctx)).To(Equal([]string{
				"push.commit/101/" + shaA, "push.commit/101/" + shaC, "push.persist",
			}))
			Expect(harness.Column(ctx, `SELECT sha FROM gitlab_commit WHERE workspace_id = $1 ORDER BY sha`, ws)).
				To(Equal([]string{shaA, shaC}))
			// Each commit was written in the shared transaction that rolled back, then in its own step.
			Expect(faulty.commitWrites()).To(Equal(map[string]int{shaA: 2, shaB: 2, shaC: 2}))

			push.ReleaseForRetry(ctx)
			Expect(push.Attempt(ctx)).To(Succeed())
			Expect(push.Steps(ctx)).To(Equal([]string{
				"push.commit/101/" + shaA, "push.commit/101/" + shaB, "push.commit/101/" + shaC, "push.persist",
			}))
			Expect(harness.Column(ctx, `SELECT sha FROM gitlab_commit WHERE workspace_id = $1 ORDER BY sha`, ws)).
				To(Equal([]string{shaA, shaB, shaC}))
			// The retry wrote only the missing commit; the committed ones were skipped.
			Expect(faulty.commitWrites()).To(Equal(map[string]int{shaA: 2, shaB: 3, shaC: 2}))
			Expect(harness.Column(ctx, `SELECT ref || ' ' || commit_count FROM gitlab_push WHERE workspace_id = $1`, ws)).
				To(Equal([]string{"refs/heads/main 3"}))
		})
	})

	// The per-commit loop is the production form of a fallback: it goes on past a commit whose
	// write failed. A rejected inbox write is not such a failure: the fence decided this attempt
	// may write nothing more, so the push returns it unchanged at once, trying no commit on its own.
	When("the commits' write is rejected by the fence (the lease was taken back while it ran)", func() {
		It("returns the rejection at once, writes none of the commits and tries none on its own", func(ctx SpecContext) {
			push := harness.Leased(ctx, ws, "Push Hook", "gitlab:project:101", pushPayload(101, shaA, shaB, shaC))
			faulty.onCommitOnce(shaB, func(ctx context.Context) { push.NextLease(ctx) })

			err := push.Attempt(ctx)
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(inbox.Classify(err)).To(Equal(inbox.LeaseLost))
			Expect(err.Error()).NotTo(ContainSubstring("commits not written"), "returned unchanged, not as a commit failure")
			Expect(tried.stepsTried()).To(Equal([]string{
				"push.persist", "push.commit/101/" + shaA, "push.commit/101/" + shaB, "push.commit/101/" + shaC,
			}), "the commits were claimed together once, and none was tried again in its own step")
			Expect(push.Steps(ctx)).To(Equal([]string{"push.persist"}), "a fence rejection mid-push commits no commit step")
			Expect(harness.Column(ctx, `SELECT sha FROM gitlab_commit WHERE workspace_id = $1 ORDER BY sha`, ws)).To(BeEmpty())
			Expect(faulty.commitWrites()).To(Equal(map[string]int{shaA: 1, shaB: 1, shaC: 1}))
		})
	})

	It("writes a push's commits and their steps in one transaction", func(ctx SpecContext) {
		push := harness.Leased(ctx, ws, "Push Hook", "gitlab:project:101", pushPayload(101, shaA, shaB, shaC))
		Expect(push.Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT DISTINCT xmin::text FROM gitlab_commit WHERE workspace_id = $1`, ws)).To(HaveLen(1))
		Expect(harness.Column(ctx, `SELECT count(*)::text FROM provider_event_step
			WHERE step_name LIKE 'push.commit/101/%'
			  AND xmin = (SELECT xmin FROM gitlab_commit WHERE workspace_id = $1 LIMIT 1)`, ws)).
			To(Equal([]string{"3"}), "the commits' steps commit with them")
		Expect(faulty.commitWrites()).To(Equal(map[string]int{shaA: 1, shaB: 1, shaC: 1}))
	})

	It("names each commit step by project id and SHA, whatever the order of the commits", func(ctx SpecContext) {
		first := harness.Leased(ctx, ws, "Push Hook", "gitlab:project:101", pushPayload(101, shaA, shaB))
		Expect(first.Attempt(ctx)).To(Succeed())
		// The same commits in another order under a retry: every step is already committed.
		reordered := first
		reordered.Payload = pushPayload(101, shaB, shaA)
		reordered.ReleaseForRetry(ctx)
		Expect(reordered.Attempt(ctx)).To(Succeed())
		Expect(faulty.commitWrites()).To(Equal(map[string]int{shaA: 1, shaB: 1}))
	})

	It("discovers the pushed project", func(ctx context.Context) {
		push := harness.Leased(ctx, ws, "Push Hook", "gitlab:project:101", pushPayload(101, shaA))
		Expect(push.Attempt(ctx)).To(Succeed())
		Expect(harness.Column(ctx, `SELECT path_with_namespace FROM gitlab_project WHERE workspace_id = $1`, ws)).
			To(Equal([]string{"acme/api"}))
	})
})
