package operators_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/replayjobs"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// runningJobs counts the RUNNING replay jobs of workspace ws.
func runningJobs(ctx context.Context, ws int64) int {
	GinkgoHelper()
	return support.Count(ctx, pool, `SELECT count(*) FROM replay_job WHERE workspace_id = $1 AND state = 'RUNNING'`, ws)
}

// eventuallyWaitingForLocks waits until n sessions of the database wait for a lock, whoever
// holds it.
func eventuallyWaitingForLocks(ctx context.Context, n int) {
	GinkgoHelper()
	Eventually(func() int {
		return support.Count(ctx, other, `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	}).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).Should(Equal(n), "sessions waiting for a lock")
}

// finishedAt reads when job id ended.
func finishedAt(ctx context.Context, id int64) time.Time {
	GinkgoHelper()
	return support.Scalar[time.Time](ctx, pool, `SELECT finished_at FROM replay_job WHERE id = $1`, id)
}

var _ = Describe("Bulk replay limits", func() {
	var (
		acme, beta workspaceFixture
		ana        accountFixture // ADMIN of acme
		mia        accountFixture // MEMBER of acme
		bob        accountFixture // ADMIN of beta
	)

	BeforeEach(func(ctx SpecContext) {
		acme, beta = newWorkspace(ctx, "acme"), newWorkspace(ctx, "beta")
		ana = newAccount(ctx, "ana", false, acme, "ADMIN")
		mia = newAccount(ctx, "mia", false, acme, "MEMBER")
		bob = newAccount(ctx, "bob", false, beta, "ADMIN")
	})

	When("a workspace runs as many jobs as it may", func() {
		It("refuses another start with 409 replay-limit naming the running limit, counts no other workspace's jobs, and starts again once one ends", func(ctx SpecContext) {
			insertDeadRows(ctx, acme.ID, 6, 2, "PERMANENT:*json.SyntaxError", time.Hour)
			insertDeadRows(ctx, beta.ID, 2, 1, "PERMANENT:*json.SyntaxError", time.Hour)
			var ids []int64
			for range replayMaxRunning {
				r := startReplay(acme, ana.Token, map[string]any{})
				Expect(r.Status).To(Equal(202), r.Raw)
				ids = append(ids, jobID(r))
			}

			refused := startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"eventType": "issues"}})
			Expect(refused.Status).To(Equal(409), refused.Raw)
			Expect(refused.JSON).To(Equal(map[string]any{"error": "replay-limit", "limit": "running", "max": float64(replayMaxRunning)}))
			Expect(startReplay(acme, adminToken, map[string]any{}).Status).To(Equal(409), "the instance administrator is held to it too")
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM replay_job WHERE workspace_id = $1`, acme.ID)).To(Equal(replayMaxRunning))

			By("the dry run still counts, and another workspace starts")
			dry := startReplay(acme, mia.Token, map[string]any{"dryRun": true})
			Expect(dry.Status).To(Equal(200), dry.Raw)
			Expect(dry.JSON).To(Equal(map[string]any{"matched": float64(6)}))
			Expect(startReplay(beta, bob.Token, map[string]any{}).Status).To(Equal(202))

			By("once a job ends, the workspace starts one again")
			Expect(call("POST", fmt.Sprintf("/api/workspaces/acme/integration/replays/%d/cancel", ids[0]), ana.Token, nil).Status).To(Equal(200))
			again := startReplay(acme, ana.Token, map[string]any{})
			Expect(again.Status).To(Equal(202), again.Raw)
			Expect(runningJobs(ctx, acme.ID)).To(Equal(replayMaxRunning))
		})

		It("lets exactly one of many concurrent starts take the last place", func(ctx SpecContext) {
			const starts = 8
			insertDeadRows(ctx, acme.ID, 4, 2, "PERMANENT:*json.SyntaxError", time.Hour)
			Expect(startReplay(acme, ana.Token, map[string]any{}).Status).To(Equal(202))

			By("every start is held where it stores its job (its workspace key check), after it counted the running jobs")
			tx, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = tx.Rollback(context.Background()) })
			_, err = tx.Exec(ctx, `SELECT 1 FROM workspace WHERE id = $1 FOR UPDATE`, acme.ID)
			Expect(err).NotTo(HaveOccurred())
			answers := make(chan response, starts)
			for range starts {
				go func() {
					defer GinkgoRecover()
					answers <- startReplay(acme, ana.Token, map[string]any{})
				}()
			}
			eventuallyWaitingForLocks(ctx, starts)
			Expect(tx.Rollback(ctx)).To(Succeed())

			statuses := map[int]int{}
			for range starts {
				var r response
				Eventually(answers).WithTimeout(settle).Should(Receive(&r))
				statuses[r.Status]++
				if r.Status == 409 {
					Expect(r.JSON).To(Equal(map[string]any{"error": "replay-limit", "limit": "running", "max": float64(replayMaxRunning)}))
				}
			}
			Expect(statuses).To(Equal(map[int]int{202: 1, 409: starts - 1}))
			Expect(runningJobs(ctx, acme.ID)).To(Equal(replayMaxRunning))
		})
	})

	When("a filter matches more rows than one job may replay", func() {
		It("refuses the start whole with 409 replay-limit naming the rows limit, writing nothing, while the dry run still counts them all", func(ctx SpecContext) {
			old := insertDeadRows(ctx, acme.ID, 1, 1, "PERMANENT:*json.SyntaxError", 48*time.Hour)
			recent := insertDeadRows(ctx, acme.ID, replayMaxRows, 10, "PERMANENT:*json.SyntaxError", time.Hour)

			dry := startReplay(acme, mia.Token, map[string]any{"dryRun": true})
			Expect(dry.Status).To(Equal(200), dry.Raw)
			Expect(dry.JSON).To(Equal(map[string]any{"matched": float64(replayMaxRows + 1)}))

			refused := startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{}})
			Expect(refused.Status).To(Equal(409), refused.Raw)
			Expect(refused.JSON).To(Equal(map[string]any{"error": "replay-limit", "limit": "rows", "max": float64(replayMaxRows)}))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM replay_job`)).To(Equal(0))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM replay_job_row`)).To(Equal(0))
			Expect(statesOf(ctx, append(old, recent...))).To(Equal(map[string]int{"DEAD": replayMaxRows + 1}))

			By("a filter narrowed to the limit starts, with every row it matches")
			narrowed := startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{
				"deadAfter": time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)}})
			Expect(narrowed.Status).To(Equal(202), narrowed.Raw)
			Expect(narrowed.JSON["matched"]).To(Equal(float64(replayMaxRows)))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM replay_job_row`)).To(Equal(replayMaxRows))
		})
	})
})

var _ = Describe("Bulk replays of several workspaces", func() {
	var (
		acme, beta, gamma workspaceFixture
		ana, bob, cleo    accountFixture // ADMINs of acme, beta and gamma
	)

	BeforeEach(func(ctx SpecContext) {
		acme, beta, gamma = newWorkspace(ctx, "acme"), newWorkspace(ctx, "beta"), newWorkspace(ctx, "gamma")
		ana = newAccount(ctx, "ana", false, acme, "ADMIN")
		bob = newAccount(ctx, "bob", false, beta, "ADMIN")
		cleo = newAccount(ctx, "cleo", false, gamma, "ADMIN")
	})

	It("hands a job back between batches when another workspace's job waits, and the claim takes the waiting workspace first", func(ctx SpecContext) {
		insertDeadRows(ctx, acme.ID, 40, 4, "PERMANENT:*json.SyntaxError", time.Hour)
		insertDeadRows(ctx, acme.ID, 40, 4, "UNKNOWN:*errors.errorString", time.Hour)
		first := jobID(startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"errorClass": "PERMANENT:*json.SyntaxError"}}))
		second := jobID(startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"errorClass": "UNKNOWN:*errors.errorString"}}))

		l, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(l.JobID).To(Equal(first), "within a workspace, its oldest job first")
		_, more, err := replayStore.ReplayBatch(ctx, l, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(more).To(BeTrue())
		yielded, err := replayStore.YieldReplayJob(ctx, l)
		Expect(err).NotTo(HaveOccurred())
		Expect(yielded).To(BeFalse(), "the workspace's own waiting job is no reason to hand the job back")

		By("beta starts a one-row replay: acme's job is handed back and the next claim takes beta's")
		insertDeadRows(ctx, beta.ID, 1, 1, "PERMANENT:*json.SyntaxError", time.Hour)
		waiting := jobID(startReplay(beta, bob.Token, map[string]any{}))
		yielded, err = replayStore.YieldReplayJob(ctx, l)
		Expect(err).NotTo(HaveOccurred())
		Expect(yielded).To(BeTrue())
		_, _, err = replayStore.ReplayBatch(ctx, l, 10, time.Minute)
		Expect(err).To(MatchError(inbox.ErrLeaseLost), "the handed-back lease writes nothing more")
		b, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(b.JobID).To(Equal(waiting), "beta's turn never came; acme's just did")

		By("the next runner takes acme's first job again, where its batch stopped, before acme's second")
		a, ok, err := replayStore.ClaimReplayJob(ctx, "server-b", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(a.JobID).To(Equal(first))
		Expect(a.Epoch).To(BeNumerically(">", l.Epoch))
		Expect(job(acme, first, ana.Token).JSON["replayed"]).To(Equal(float64(10)))
		c, ok, err := replayStore.ClaimReplayJob(ctx, "server-c", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(c.JobID).To(Equal(second))
	})

	It("gives the next runner to the workspace with fewer jobs held, even when its turn came later", func(ctx SpecContext) {
		var acmeJobs, betaJobs []int64
		for _, class := range []string{"PERMANENT:*json.SyntaxError", "UNKNOWN:*errors.errorString"} {
			insertDeadRows(ctx, acme.ID, 5, 1, class, time.Hour)
			insertDeadRows(ctx, beta.ID, 5, 1, class, time.Hour)
			acmeJobs = append(acmeJobs, jobID(startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"errorClass": class}})))
			betaJobs = append(betaJobs, jobID(startReplay(beta, bob.Token, map[string]any{"filter": map[string]any{"errorClass": class}})))
		}
		claim := func(owner string) ports.ReplayLease {
			GinkgoHelper()
			l, ok, err := replayStore.ClaimReplayJob(ctx, owner, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			return l
		}
		Expect(claim("server-a").JobID).To(Equal(acmeJobs[0]), "acme's turn first: its job is the oldest")
		b := claim("server-b")
		Expect(b.JobID).To(Equal(betaJobs[0]))
		Expect(replayStore.ReleaseReplay(ctx, b)).To(Succeed())
		Expect(claim("server-b").JobID).To(Equal(betaJobs[0]), "beta holds none and acme one, though acme's turn is older")
	})

	It("finishes another workspace's one-row replay while one workspace's jobs are still running", func(ctx SpecContext) {
		var backlog []int64
		for _, class := range []string{"PERMANENT:*json.SyntaxError", "UNKNOWN:*errors.errorString"} {
			insertDeadRows(ctx, acme.ID, 1000, 10, class, time.Hour)
			backlog = append(backlog, jobID(startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"errorClass": class}})))
		}
		// One runner, batches of 5: each of acme's jobs is 200 batches, so beta's job starts
		// long before acme's first one could end.
		startRunner("server-a", replayStore, 5, &countingNotifier{})
		Eventually(func() any { return job(acme, backlog[0], ana.Token).JSON["replayed"] }).WithTimeout(settle).
			Should(BeNumerically(">", 0))

		insertDeadRows(ctx, beta.ID, 1, 1, "PERMANENT:*json.SyntaxError", time.Hour)
		one := jobID(startReplay(beta, bob.Token, map[string]any{}))
		Expect(job(acme, backlog[0], ana.Token).JSON["state"]).To(Equal("RUNNING"), "beta's job came while acme's first one ran")

		Eventually(func() any { return job(beta, one, bob.Token).JSON["state"] }).WithTimeout(settle).Should(Equal("DONE"))
		for _, id := range backlog {
			Eventually(func() any { return job(acme, id, ana.Token).JSON["state"] }).WithTimeout(time.Minute).Should(Equal("DONE"))
			Expect(finishedAt(ctx, one)).To(BeTemporally("<", finishedAt(ctx, id)), "beta's job ended before acme's job %d", id)
		}
	})

	It("never runs one job on two servers: three servers' runners replay each row of six jobs of three workspaces once", func(ctx SpecContext) {
		type started struct {
			ws    workspaceFixture
			token string
			id    int64
		}
		var jobs []started
		for _, w := range []struct {
			ws    workspaceFixture
			token string
		}{{acme, ana.Token}, {beta, bob.Token}, {gamma, cleo.Token}} {
			for _, class := range []string{"PERMANENT:*json.SyntaxError", "UNKNOWN:*errors.errorString"} {
				insertDeadRows(ctx, w.ws.ID, 150, 5, class, time.Hour)
				r := startReplay(w.ws, w.token, map[string]any{"filter": map[string]any{"errorClass": class}})
				Expect(r.Status).To(Equal(202), r.Raw)
				jobs = append(jobs, started{w.ws, w.token, jobID(r)})
			}
		}

		storeB, err := replayjobs.New(other, replayjobs.Config{})
		Expect(err).NotTo(HaveOccurred())
		storeC, err := replayjobs.New(pool, replayjobs.Config{})
		Expect(err).NotTo(HaveOccurred())
		for owner, store := range map[string]ports.ReplayJobStore{"server-a": replayStore, "server-b": storeB, "server-c": storeC} {
			startRunner(owner, store, 7, &countingNotifier{})
		}
		for _, j := range jobs {
			Eventually(func() any { return job(j.ws, j.id, j.token).JSON["state"] }).WithTimeout(time.Minute).Should(Equal("DONE"))
			r := job(j.ws, j.id, j.token).JSON
			Expect([]any{r["matched"], r["replayed"], r["skipped"]}).To(Equal([]any{float64(150), float64(150), float64(0)}),
				"job %d: a row replayed by two servers would be counted skipped by the second", j.id)
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE state = 'QUEUED'`)).To(Equal(900))
	})
})
