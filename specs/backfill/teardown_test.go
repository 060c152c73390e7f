package backfill_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func setState(ctx context.Context, conn int64, state string) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `UPDATE connection SET state = $2, updated_at = now() WHERE id = $1`, conn, state)
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Sync jobs follow subscriptions and the connection's lifecycle", func() {
	var (
		gh                 *fakeGitHub
		acme, other        int64
		appConn, docsConn  int64
		otherConn          int64
		a                  server
		githubRowsOf       func(ctx context.Context, ws int64, repo int64) int
		workspaceGitHubRow func(ctx context.Context, ws int64) int
	)

	BeforeEach(func(ctx SpecContext) {
		gh = newFakeGitHub(patToken)
		gh.add(history(appRepoID, "acme/app", appRepoBase, 120))
		gh.add(history(docsRepoID, "acme/docs", docsBase, 30))
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		other = support.NewWorkspace(ctx, manage, "other").ID
		appConn = patConnection(ctx, acme, patToken)
		docsConn = patConnection(ctx, acme, patToken)
		otherConn = patConnection(ctx, other, patToken)
		subscribe(ctx, acme, appConn, appRepoID, "acme/app")
		subscribe(ctx, acme, docsConn, docsRepoID, "acme/docs")
		subscribe(ctx, other, otherConn, appRepoID, "acme/app")
		a = newServer("server-a", pool, jobs, gh)
		drainUntil(ctx, a, func() bool {
			return job(ctx, appConn, appRepoID).State == "DONE" && job(ctx, docsConn, docsRepoID).State == "DONE" &&
				job(ctx, otherConn, appRepoID).State == "DONE"
		})
		githubRowsOf = func(ctx context.Context, ws, repo int64) int {
			GinkgoHelper()
			return count(ctx, `SELECT (SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2)
				+ (SELECT count(*) FROM github_pull_request WHERE workspace_id = $1 AND repository_id = $2)
				+ (SELECT count(*) FROM github_label WHERE workspace_id = $1 AND repository_id = $2)
				+ (SELECT count(*) FROM github_milestone WHERE workspace_id = $1 AND repository_id = $2)
				+ (SELECT count(*) FROM github_repository WHERE workspace_id = $1 AND id = $2)`, ws, repo)
		}
		workspaceGitHubRow = func(ctx context.Context, ws int64) int {
			GinkgoHelper()
			return count(ctx, `SELECT (SELECT count(*) FROM github_user WHERE workspace_id = $1)
				+ (SELECT count(*) FROM github_repository WHERE workspace_id = $1)
				+ (SELECT count(*) FROM github_issue WHERE workspace_id = $1)`, ws)
		}
		Expect(githubRowsOf(ctx, acme, appRepoID)).To(Equal(120 + 2 + 3 + 1 + 1))
	})

	It("keeps a finished job when the subscription set is replaced with the same resource, and drops it when the resource goes", func(ctx SpecContext) {
		tx, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = tx.Exec(ctx, `DELETE FROM connection_subscription WHERE connection_id = $1`, appConn)
		Expect(err).NotTo(HaveOccurred())
		_, err = tx.Exec(ctx, `INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
			VALUES ($1, $2, 'GITHUB', 'repository', '4242', 'acme/app')`, appConn, acme)
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())
		Expect(job(ctx, appConn, appRepoID).State).To(Equal("DONE"))

		_, err = pool.Exec(ctx, `DELETE FROM connection_subscription WHERE connection_id = $1`, appConn)
		Expect(err).NotTo(HaveOccurred())
		Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1`, appConn)).To(BeZero())
	})

	It("backfills again when a suspended connection becomes ACTIVE", func(ctx SpecContext) {
		setState(ctx, appConn, "SUSPENDED")
		Expect(job(ctx, appConn, appRepoID).State).To(Equal("DONE"))
		setState(ctx, appConn, "ACTIVE")
		Expect(job(ctx, appConn, appRepoID)).To(And(HaveField("State", "QUEUED"), HaveField("Pages", BeEquivalentTo(0))))
		drainUntil(ctx, a, func() bool { return job(ctx, appConn, appRepoID).State == "DONE" })
		Expect(gh.count("GET /repos/acme/app/issues?page=1")).To(Equal(3)) // two workspaces, then the restart
	})

	When("a connection is uninstalled", func() {
		It("deletes, after the transition commits, only what that connection brought into the workspace", func(ctx SpecContext) {
			setState(ctx, appConn, "UNINSTALLED")
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'QUEUED'`, appConn)).To(Equal(1))
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'BACKFILL'`, appConn)).To(BeZero())

			drainUntil(ctx, a, func() bool {
				return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, appConn) == 1
			})
			Expect(githubRowsOf(ctx, acme, appRepoID)).To(BeZero())
			// The other connection's repository and the shared users stay; another workspace's
			// copy of the same repository is not this workspace's to delete.
			Expect(githubRowsOf(ctx, acme, docsRepoID)).To(Equal(30 + 2 + 3 + 1 + 1))
			Expect(count(ctx, `SELECT count(*) FROM github_user WHERE workspace_id = $1`, acme)).NotTo(BeZero())
			Expect(githubRowsOf(ctx, other, appRepoID)).To(Equal(120 + 2 + 3 + 1 + 1))
		})

		It("removes the torn-down repository's changes from the feed and publishes what went", func(ctx SpecContext) {
			feedOf := func(ws int64) map[string]string {
				GinkgoHelper()
				rows, err := pool.Query(ctx, `SELECT subject, data::text FROM workspace_change WHERE workspace_id = $1 ORDER BY id`, ws)
				Expect(err).NotTo(HaveOccurred())
				out := map[string]string{}
				for rows.Next() {
					var subject, data string
					Expect(rows.Scan(&subject, &data)).To(Succeed())
					out[subject] = data
				}
				Expect(rows.Err()).NotTo(HaveOccurred())
				return out
			}
			appIssue := fmt.Sprintf("github:issue:%d", scalarInt(ctx, `SELECT min(id) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2`, acme, appRepoID))
			docsIssue := fmt.Sprintf("github:issue:%d", scalarInt(ctx, `SELECT min(id) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2`, acme, docsRepoID))
			appRepo, docsRepo := fmt.Sprintf("github:repository:%d", appRepoID), fmt.Sprintf("github:repository:%d", docsRepoID)
			before := feedOf(acme)
			Expect(before[appIssue]).To(ContainSubstring(`"title"`), "the backfill published the issue")
			Expect(before[appRepo]).To(ContainSubstring("acme/app"))
			changesOfApp := count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1
				AND (subject = $2 OR data->>'repositoryId' = $3 OR subject IN (
					SELECT 'github:issue:' || id FROM github_issue WHERE workspace_id = $1 AND repository_id = $3::bigint
					UNION ALL SELECT 'github:pull_request:' || id FROM github_pull_request WHERE workspace_id = $1 AND repository_id = $3::bigint))`,
				acme, appRepo, fmt.Sprint(appRepoID))
			Expect(changesOfApp).To(BeNumerically(">", 120))
			otherWorkspace := feedOf(other)

			setState(ctx, appConn, "UNINSTALLED")
			drainUntil(ctx, a, func() bool {
				return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, appConn) == 1
			})

			after := feedOf(acme)
			Expect(after[appIssue]).To(MatchJSON(`{"removed":true}`))
			Expect(after[appRepo]).To(MatchJSON(`{"removed":true}`))
			Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND type LIKE 'github.%' AND data::text LIKE '%acme/app%'`, acme)).
				To(BeZero(), "nothing of the torn-down repository is left in the feed")
			Expect(after[docsIssue]).To(Equal(before[docsIssue]), "the other connection's repository keeps its changes")
			Expect(after[docsRepo]).To(Equal(before[docsRepo]))
			Expect(feedOf(other)).To(Equal(otherWorkspace), "another workspace's feed is not this teardown's")

			By("publishing the removal, so consumers can follow it")
			Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND type = 'connection.torn_down'`, acme)).To(Equal(1))
			Expect(support.Column(ctx, pool, `SELECT (data - 'version')::text FROM workspace_change
				WHERE workspace_id = $1 AND subject = $2 AND type = 'connection.torn_down' AND data ? 'version'`, acme, fmt.Sprintf("connection:%d", appConn))).
				To(ConsistOf(MatchJSON(fmt.Sprintf(
					`{"connectionId":%d,"provider":"GITHUB","resources":[{"type":"repository","id":"%d"}],"everything":false,"removedChanges":%d}`,
					appConn, appRepoID, changesOfApp))))
		})

		It("deletes the workspace's shared GitHub data too when no live GitHub connection is left", func(ctx SpecContext) {
			setState(ctx, appConn, "UNINSTALLED")
			setState(ctx, docsConn, "UNINSTALLED")
			drainUntil(ctx, a, func() bool {
				return count(ctx, `SELECT count(*) FROM sync_job WHERE workspace_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, acme) == 2
			})
			Expect(workspaceGitHubRow(ctx, acme)).To(BeZero())
			Expect(workspaceGitHubRow(ctx, other)).NotTo(BeZero())
		})

		It("keeps a repository that another live connection of the workspace also subscribes to", func(ctx SpecContext) {
			subscribe(ctx, acme, docsConn, appRepoID, "acme/app")
			setState(ctx, appConn, "UNINSTALLED")
			drainUntil(ctx, a, func() bool {
				return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, appConn) == 1
			})
			Expect(githubRowsOf(ctx, acme, appRepoID)).To(Equal(120 + 2 + 3 + 1 + 1))
		})

		It("backfills again when the connection is reconnected", func(ctx SpecContext) {
			setState(ctx, appConn, "UNINSTALLED")
			drainUntil(ctx, a, func() bool { return githubRowsOf(ctx, acme, appRepoID) == 0 })
			setState(ctx, appConn, "ACTIVE")
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN'`, appConn)).To(BeZero())
			drainUntil(ctx, a, func() bool { return job(ctx, appConn, appRepoID).State == "DONE" })
			Expect(githubRowsOf(ctx, acme, appRepoID)).To(Equal(120 + 2 + 3 + 1 + 1))
		})
	})
})

var _ = Describe("A sync page during person erasure", func() {
	It("waits for the erasure pass (contention, no budget used) and commits after it", func(ctx SpecContext) {
		gh := newFakeGitHub(patToken)
		gh.add(history(docsRepoID, "acme/docs", docsBase, 30))
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		conn := patConnection(ctx, acme, patToken)
		subscribe(ctx, acme, conn, docsRepoID, "acme/docs")
		a := newServer("server-a", pool, jobs, gh)

		_, err := pool.Exec(ctx, `UPDATE inbox_erasure_fence SET in_progress = true WHERE name = 'inbox'`)
		Expect(err).NotTo(HaveOccurred())
		Expect(a.runner.Drain(ctx)).To(Succeed())
		j := job(ctx, conn, docsRepoID)
		Expect(j.State).To(Equal("QUEUED"))
		Expect(j.Pages).To(BeZero())
		Expect(j.Attempt).To(BeZero())
		Expect(j.LastError).To(HaveValue(Equal("contention")))
		Expect(count(ctx, `SELECT count(*) FROM github_repository`)).To(BeZero())

		_, err = pool.Exec(ctx, `UPDATE inbox_erasure_fence SET in_progress = false WHERE name = 'inbox'`)
		Expect(err).NotTo(HaveOccurred())
		drainUntil(ctx, a, func() bool { return job(ctx, conn, docsRepoID).State == "DONE" })
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(30))
	})
})

var _ = Describe("Uninstalling a connection of a provider without teardown", func() {
	It("queues no teardown job (Slack erases in its own uninstall step)", func(ctx SpecContext) {
		ws := support.NewWorkspace(ctx, manage, "acme").ID
		var slackConn, gitlabConn int64
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, 'SLACK', 'SLACK', 'ACTIVE', 'https://slack.com', '{"teamId":"T1","appId":"A1"}', 'T1') RETURNING id`, ws).
			Scan(&slackConn)).To(Succeed())
		gitlabConn = gitlabConnection(ctx, ws)
		setState(ctx, slackConn, "UNINSTALLED")
		setState(ctx, gitlabConn, "UNINSTALLED")
		Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1`, slackConn)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN'`, gitlabConn)).To(Equal(1))
	})
})

func scalarInt(ctx context.Context, sql string, args ...any) int64 {
	GinkgoHelper()
	var n int64
	Expect(pool.QueryRow(ctx, sql, args...).Scan(&n)).To(Succeed())
	return n
}
