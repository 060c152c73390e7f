package github_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
)

var _ = Describe("Versions of mirrored data", func() {
	var (
		ws int64
		// the repository the workspace monitors
		repo = repository(4242, "acme/app", 77)
	)

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, "acme")
	})

	title := func(ctx SpecContext) string {
		return scalar[string](ctx, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = 3001`, ws)
	}

	When("an older issues edited is delivered after a newer one", func() {
		It("keeps the newer title", func(ctx SpecContext) {
			reg := registry(githubhandlers.Deps{})
			Expect(leased(ctx, ws, "issues", body(obj{
				"action": "edited", "issue": issue(3001, 1, "Newer title", "2024-02-03T00:00:00Z"), "repository": repo,
			})).handle(ctx, reg)).To(Succeed())
			Expect(leased(ctx, ws, "issues", body(obj{
				"action": "edited", "issue": issue(3001, 1, "Older title", "2024-02-02T00:00:00Z"), "repository": repo,
			})).handle(ctx, reg)).To(Succeed())

			Expect(title(ctx)).To(Equal("Newer title"))
		})
	})

	When("two deliveries carry the same updated_at", func() {
		It("applies the later-admitted one", func(ctx SpecContext) {
			reg := registry(githubhandlers.Deps{})
			for _, t := range []string{"First of the second", "Second of the second"} {
				Expect(leased(ctx, ws, "issues", body(obj{
					"action": "edited", "issue": issue(3001, 1, t, "2024-02-03T00:00:00Z"), "repository": repo,
				})).handle(ctx, reg)).To(Succeed())
			}
			Expect(title(ctx)).To(Equal("Second of the second"))
		})
	})

	When("an issue is deleted and an older edit arrives later", func() {
		It("keeps the tombstone", func(ctx SpecContext) {
			reg := registry(githubhandlers.Deps{})
			Expect(leased(ctx, ws, "issues", body(obj{
				"action": "deleted", "issue": issue(3001, 1, "Gone", "2024-02-05T00:00:00Z"), "repository": repo,
			})).handle(ctx, reg)).To(Succeed())
			Expect(leased(ctx, ws, "issues", body(obj{
				"action": "edited", "issue": issue(3001, 1, "Back?", "2024-02-04T00:00:00Z"), "repository": repo,
			})).handle(ctx, reg)).To(Succeed())

			Expect(scalar[bool](ctx, `SELECT deleted FROM github_issue WHERE workspace_id = $1 AND id = 3001`, ws)).To(BeTrue())
		})
	})
})

var _ = Describe("Related issues", func() {
	var (
		ws, conn int64
		// acme/app (4242, owned by 77) is monitored; other/lib (5252, owned by 88) may not be.
		parentRepo = repository(4242, "acme/app", 77)
		otherRepo  = repository(5252, "other/lib", 88)
	)

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, "acme")
		conn = appConnection(ctx, ws, 1, "ACTIVE")
		subscribe(ctx, ws, conn, "repository", 4242)
	})

	subIssueAdded := func() []byte {
		return body(obj{
			"action": "sub_issue_added", "repository": parentRepo,
			"parent_issue_id": 3001, "parent_issue": issue(3001, 1, "Parent", "2024-02-01T00:00:00Z"),
			"sub_issue_id": 3002, "sub_issue": issue(3002, 9, "Child elsewhere", "2024-02-01T00:00:00Z"),
			"sub_issue_repo": otherRepo,
		})
	}
	issues := func(ctx SpecContext) int {
		return scalar[int](ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND id = 3002`, ws)
	}
	links := func(ctx SpecContext) int {
		return scalar[int](ctx, `SELECT count(*) FROM github_sub_issue WHERE workspace_id = $1 AND NOT deleted`, ws)
	}

	When("the sub-issue lives in a repository the workspace does not monitor", func() {
		It("writes the parent but neither the sub-issue, its repository nor the link", func(ctx SpecContext) {
			d := leased(ctx, ws, "sub_issues", subIssueAdded())
			Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())

			Expect(scalar[string](ctx, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = 3001`, ws)).To(Equal("Parent"))
			Expect(issues(ctx)).To(BeZero())
			Expect(links(ctx)).To(BeZero())
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_repository WHERE workspace_id = $1 AND id = 5252`, ws)).To(BeZero())
			Expect(d.steps(ctx)).To(Equal([]string{"sub_issue.upsert"}))
		})
	})

	When("the workspace also monitors the sub-issue's organization", func() {
		It("writes the sub-issue and the link", func(ctx SpecContext) {
			subscribe(ctx, ws, conn, "organization", 88)
			Expect(leased(ctx, ws, "sub_issues", subIssueAdded()).handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())

			Expect(issues(ctx)).To(Equal(1))
			Expect(links(ctx)).To(Equal(1))
		})
	})

	When("a dependency names a blocking issue of an unmonitored repository", func() {
		It("does not write the blocking issue or the dependency", func(ctx SpecContext) {
			d := leased(ctx, ws, "issue_dependencies", body(obj{
				"action": "blocked_by_added", "repository": parentRepo,
				"blocked_issue_id": 3001, "blocked_issue": issue(3001, 1, "Blocked", "2024-02-01T00:00:00Z"),
				"blocking_issue_id": 3002, "blocking_issue": issue(3002, 9, "Blocker", "2024-02-01T00:00:00Z"),
				"blocking_issue_repo": otherRepo,
			}))
			Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())
			Expect(issues(ctx)).To(BeZero())
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_issue_dependency WHERE workspace_id = $1`, ws)).To(BeZero())

			subscribe(ctx, ws, conn, "repository", 5252)
			Expect(leased(ctx, ws, "issue_dependencies", []byte(d.Payload)).handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_issue_dependency
				WHERE workspace_id = $1 AND blocked_issue_id = 3001 AND blocking_issue_id = 3002`, ws)).To(Equal(1))
		})
	})
})
