package operators_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/replayjobs"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// insertDeadRows stores n DEAD GitHub "issues" rows of workspace ws in one statement, row i in
// repository i % repos (its own scope), ids ascending with i, ended endedAgo ago with error
// class class, and returns their ids in id order.
func insertDeadRows(ctx context.Context, ws int64, n, repos int, class string, endedAgo time.Duration) []int64 {
	GinkgoHelper()
	scopes, subjects := make([]string, repos), make([]string, repos)
	for r := range repos {
		subject, err := inbox.NewSubject("github", "repository", fmt.Sprint(1000+r))
		Expect(err).NotTo(HaveOccurred())
		d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: ws, Provider: githubProvider, EventType: "issues",
			DeliveryKey: "k", Subject: subject}, time.Now())
		Expect(err).NotTo(HaveOccurred())
		scopes[r], subjects[r] = d.Scope().String(), d.Subject().String()
	}
	rows, err := pool.Query(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, headers, state, attempt, lease_epoch, due_at, received_at, ended_at, error_class)
		SELECT $1::bigint, 'GITHUB', 'issues', 'bulk-' || $8::bigint || '-' || i, ($2::text[])[i % $4 + 1], ($3::text[])[i % $4 + 1],
		       '{"action":"opened"}', '{"X-GitHub-Event":"issues"}'::jsonb, 'DEAD', 3, 3,
		       now() - interval '2 days', now() - interval '2 days', now() - $6::bigint * interval '1 microsecond', $5
		FROM generate_series(0, $7 - 1) i
		ORDER BY i
		RETURNING id`, ws, scopes, subjects, repos, class, endedAgo.Microseconds(), n, deliveryKeys.Add(1))
	Expect(err).NotTo(HaveOccurred())
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	Expect(err).NotTo(HaveOccurred())
	return ids
}

// replayedRows reads who replayed each of ids (state, attempt, replayed_by, admin token flag).
type replayedRow struct {
	State        string
	Attempt      int
	ReplayedBy   *int64
	ByAdminToken bool
}

func replayedRowsOf(ctx context.Context, ids []int64) map[int64]replayedRow {
	GinkgoHelper()
	rows, err := pool.Query(ctx, `SELECT id, state, attempt, replayed_by, replayed_by_admin_token FROM provider_event WHERE id = ANY ($1)`, ids)
	Expect(err).NotTo(HaveOccurred())
	out := map[int64]replayedRow{}
	for rows.Next() {
		var (
			id int64
			r  replayedRow
		)
		Expect(rows.Scan(&id, &r.State, &r.Attempt, &r.ReplayedBy, &r.ByAdminToken)).To(Succeed())
		out[id] = r
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

func statesOf(ctx context.Context, ids []int64) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, r := range replayedRowsOf(ctx, ids) {
		out[r.State]++
	}
	return out
}

// startRunner runs a replay runner (a server's) until the spec ends.
func startRunner(owner string, store ports.ReplayJobStore, batch int, queued ports.Notifier) {
	GinkgoHelper()
	r, err := replays.NewRunner(replays.RunnerConfig{Owner: owner, BatchSize: batch, Interval: 50 * time.Millisecond}, store, queued, support.Logger{})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(settle).Should(BeClosed())
	})
}

func job(ws workspaceFixture, id any, token string) response {
	GinkgoHelper()
	return call("GET", fmt.Sprintf("/api/workspaces/%s/integration/replays/%v", ws.Slug, id), token, nil)
}

func startReplay(ws workspaceFixture, token string, body any) response {
	GinkgoHelper()
	return call("POST", "/api/workspaces/"+ws.Slug+"/integration/replays", token, body)
}

func jobID(r response) int64 {
	GinkgoHelper()
	Expect(r.JSON).To(HaveKey("id"), r.Raw)
	return int64(r.JSON["id"].(float64))
}

var _ = Describe("Bulk replay", func() {
	var (
		acme, beta workspaceFixture
		ana        accountFixture // ADMIN of acme
		mia        accountFixture // MEMBER of acme
		bob        accountFixture // ADMIN of beta
		root       accountFixture // instance administrator account
	)

	BeforeEach(func(ctx SpecContext) {
		acme, beta = newWorkspace(ctx, "acme"), newWorkspace(ctx, "beta")
		ana = newAccount(ctx, "ana", false, acme, "ADMIN")
		mia = newAccount(ctx, "mia", false, acme, "MEMBER")
		bob = newAccount(ctx, "bob", false, beta, "ADMIN")
		root = newAccount(ctx, "root", true, acme, "")
	})

	When("a filter selects DEAD rows", func() {
		It("counts in a dry run exactly the rows the job then replays, with the single replay's rules, and nothing else", func(ctx SpecContext) {
			matching := insertDeadRows(ctx, acme.ID, 25, 5, "PERMANENT:*json.SyntaxError", time.Hour)
			otherClass := insertDeadRows(ctx, acme.ID, 5, 5, "UNKNOWN:*errors.errorString", time.Hour)
			tooOld := insertDeadRows(ctx, acme.ID, 4, 2, "PERMANENT:*json.SyntaxError", 72*time.Hour)
			otherWorkspace := insertDeadRows(ctx, beta.ID, 6, 2, "PERMANENT:*json.SyntaxError", time.Hour)
			done := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE", EndedAgo: time.Hour})
			addStep(ctx, matching[0], "mirror-issue")

			filter := map[string]any{"provider": "GITHUB", "eventType": "issues", "errorClass": "PERMANENT:*json.SyntaxError",
				"deadAfter": time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)}
			dry := startReplay(acme, mia.Token, map[string]any{"filter": filter, "dryRun": true})
			Expect(dry.Status).To(Equal(200), dry.Raw)
			Expect(dry.JSON).To(Equal(map[string]any{"matched": float64(len(matching))}))
			Expect(statesOf(ctx, matching)).To(Equal(map[string]int{"DEAD": len(matching)}), "a dry run changes nothing")

			started := startReplay(acme, ana.Token, map[string]any{"filter": filter})
			Expect(started.Status).To(Equal(202), started.Raw)
			Expect(started.JSON).To(Equal(map[string]any{"id": started.JSON["id"], "state": "RUNNING", "matched": float64(len(matching))}))
			Expect(replayWakes.count()).To(BeNumerically(">", 0), "the server's runner is woken")

			startRunner("server-a", replayStore, 7, &countingNotifier{})
			Eventually(func() any { return job(acme, jobID(started), mia.Token).JSON["state"] }).WithTimeout(settle).Should(Equal("DONE"))
			j := job(acme, jobID(started), mia.Token).JSON
			Expect(j["matched"]).To(Equal(float64(len(matching))))
			Expect(j["replayed"]).To(Equal(float64(len(matching))))
			Expect(j["skipped"]).To(Equal(float64(0)))
			Expect(j["requestedBy"]).To(Equal(float64(ana.ID)))
			Expect(j["requestedByPrincipal"]).To(Equal("ACCOUNT"))
			Expect(j["finishedAt"]).NotTo(BeNil())
			Expect(j["filter"]).To(HaveKeyWithValue("errorClass", "PERMANENT:*json.SyntaxError"))
			Expect(j["filter"]).To(HaveKeyWithValue("receivedBefore", BeNil()))

			for id, r := range replayedRowsOf(ctx, matching) {
				Expect(r.State).To(Equal("QUEUED"), "row %d", id)
				Expect(r.Attempt).To(Equal(0), "row %d", id)
				Expect(r.ReplayedBy).To(HaveValue(Equal(ana.ID)), "row %d names the requesting account", id)
			}
			Expect(stepCount(ctx, matching[0])).To(Equal(1), "a replayed row keeps its committed steps")
			Expect(statesOf(ctx, otherClass)).To(Equal(map[string]int{"DEAD": len(otherClass)}))
			Expect(statesOf(ctx, tooOld)).To(Equal(map[string]int{"DEAD": len(tooOld)}))
			Expect(statesOf(ctx, otherWorkspace)).To(Equal(map[string]int{"DEAD": len(otherWorkspace)}))
			Expect(readRow(ctx, done).State).To(Equal("DONE"))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM replay_job_row`)).To(Equal(0), "an ended job forgets its rows")
		})

		It("records the instance administrator token as its own principal on the job and every row", func(ctx SpecContext) {
			ids := insertDeadRows(ctx, acme.ID, 3, 1, "PERMANENT:*json.SyntaxError", time.Hour)
			started := startReplay(acme, adminToken, map[string]any{"filter": map[string]any{}})
			Expect(started.Status).To(Equal(202), started.Raw)
			startRunner("server-a", replayStore, 2, &countingNotifier{})
			Eventually(func() any { return job(acme, jobID(started), adminToken).JSON["state"] }).WithTimeout(settle).Should(Equal("DONE"))
			j := job(acme, jobID(started), adminToken).JSON
			Expect(j["requestedBy"]).To(BeNil())
			Expect(j["requestedByPrincipal"]).To(Equal("INSTANCE_ADMIN_TOKEN"))
			for id, r := range replayedRowsOf(ctx, ids) {
				Expect(r.ReplayedBy).To(BeNil(), "row %d", id)
				Expect(r.ByAdminToken).To(BeTrue(), "row %d", id)
			}
		})

		It("skips a matched row that is no longer DEAD when its batch comes", func(ctx SpecContext) {
			ids := insertDeadRows(ctx, acme.ID, 6, 2, "PERMANENT:*json.SyntaxError", time.Hour)
			started := startReplay(acme, ana.Token, map[string]any{})
			Expect(started.Status).To(Equal(202), started.Raw)
			// An operator replays one row by hand, retention deletes another, before any batch.
			Expect(call("POST", fmt.Sprintf("/api/workspaces/acme/integration/dead-letters/%d/replay", ids[2]), ana.Token, nil).Status).To(Equal(200))
			_, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, ids[4])
			Expect(err).NotTo(HaveOccurred())

			startRunner("server-a", replayStore, 4, &countingNotifier{})
			Eventually(func() any { return job(acme, jobID(started), ana.Token).JSON["state"] }).WithTimeout(settle).Should(Equal("DONE"))
			j := job(acme, jobID(started), ana.Token).JSON
			Expect([]any{j["matched"], j["replayed"], j["skipped"]}).To(Equal([]any{float64(6), float64(4), float64(2)}))
		})
	})

	It("ends a job whose filter matches nothing at once, DONE with 0", func(ctx SpecContext) {
		insertDeadRows(ctx, acme.ID, 3, 1, "PERMANENT:*json.SyntaxError", time.Hour)
		started := startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"eventType": "push"}})
		Expect(started.Status).To(Equal(202), started.Raw)
		Expect(started.JSON).To(Equal(map[string]any{"id": started.JSON["id"], "state": "DONE", "matched": float64(0)}))
		j := job(acme, jobID(started), ana.Token).JSON
		Expect([]any{j["state"], j["replayed"], j["skipped"]}).To(Equal([]any{"DONE", float64(0), float64(0)}))
		Expect(j["finishedAt"]).NotTo(BeNil())
		_, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse(), "no runner has anything to do")
	})

	DescribeTable("refuses a bad request with 400 naming the field, starting nothing",
		func(ctx SpecContext, body any, field string) {
			r := startReplay(acme, ana.Token, body)
			Expect(r.Status).To(Equal(400), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "invalid-filter", "field": field}))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM replay_job`)).To(Equal(0))
		},
		Entry("an unknown filter field", map[string]any{"filter": map[string]any{"state": "DEAD"}}, "filter.state"),
		Entry("an unknown body field", map[string]any{"filters": map[string]any{}}, "filters"),
		Entry("a provider that is no provider name", map[string]any{"filter": map[string]any{"provider": "github"}}, "filter.provider"),
		Entry("a provider this server does not run", map[string]any{"filter": map[string]any{"provider": "BITBUCKET"}}, "filter.provider"),
		Entry("a provider this server does not run, in a dry run", map[string]any{"filter": map[string]any{"provider": "BITBUCKET"}, "dryRun": true}, "filter.provider"),
		Entry("an error class of no failure class", map[string]any{"filter": map[string]any{"errorClass": "FATAL:*json.SyntaxError"}}, "filter.errorClass"),
		Entry("an error class without its cause type, in a dry run", map[string]any{"filter": map[string]any{"errorClass": "PERMANENT"}, "dryRun": true}, "filter.errorClass"),
		Entry("a time that is not RFC 3339", map[string]any{"filter": map[string]any{"deadAfter": "yesterday"}}, "filter.deadAfter"),
		Entry("a dead bound without its time zone", map[string]any{"filter": map[string]any{"deadBefore": "2026-12-01T10:00:00"}}, "filter.deadBefore"),
		Entry("a received bound that is no date", map[string]any{"filter": map[string]any{"receivedAfter": "2026-13-45T10:00:00Z"}}, "filter.receivedAfter"),
		Entry("a received bound of the wrong type", map[string]any{"filter": map[string]any{"receivedBefore": 17}}, "filter.receivedBefore"),
		Entry("a text of the wrong type", map[string]any{"filter": map[string]any{"eventType": []string{"issues"}}}, "filter.eventType"),
		Entry("an overlong error class", map[string]any{"filter": map[string]any{"errorClass": strings.Repeat("x", 600)}}, "filter.errorClass"),
		Entry("a dryRun that is no boolean", map[string]any{"dryRun": "yes"}, "dryRun"),
		Entry("a filter that is no object", map[string]any{"filter": "all"}, "filter"),
	)

	It("answers a body that is no JSON object with 400 invalid-json", func() {
		r := startReplay(acme, ana.Token, []int{1})
		Expect(r.Status).To(Equal(400), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("error", "invalid-json"))
	})

	It("lets members read and dry-run, the workspace's ADMIN and the instance administrator start and cancel, and nobody else", func(ctx SpecContext) {
		insertDeadRows(ctx, acme.ID, 4, 2, "PERMANENT:*json.SyntaxError", time.Hour)
		insertDeadRows(ctx, beta.ID, 2, 1, "PERMANENT:*json.SyntaxError", time.Hour)
		own := jobID(startReplay(acme, ana.Token, map[string]any{}))
		foreign := jobID(startReplay(beta, bob.Token, map[string]any{}))

		dryRun := map[string]any{"dryRun": true}
		type attempt struct {
			who             string
			token           string
			read, dry, list int
			start, cancel   int
		}
		for _, a := range []attempt{
			{"the ADMIN", ana.Token, 200, 200, 200, 202, 200},
			{"a MEMBER", mia.Token, 200, 200, 200, 403, 403},
			{"another workspace's ADMIN", bob.Token, 403, 403, 403, 403, 403},
			{"the instance administrator account", root.Token, 200, 200, 200, 202, 200},
			{"the instance administrator token", adminToken, 200, 200, 200, 202, 200},
			{"no token", "", 401, 401, 401, 401, 401},
			{"a wrong token", "not-a-token", 401, 401, 401, 401, 401},
		} {
			// A fresh RUNNING job for each caller to cancel (matching nothing would end it).
			insertDeadRows(ctx, acme.ID, 1, 1, "PERMANENT:*json.SyntaxError", time.Hour)
			mine := jobID(startReplay(acme, adminToken, map[string]any{}))
			Expect(job(acme, own, a.token).Status).To(Equal(a.read), a.who+" reads a job")
			Expect(call("GET", "/api/workspaces/acme/integration/replays", a.token, nil).Status).To(Equal(a.list), a.who+" lists jobs")
			Expect(startReplay(acme, a.token, dryRun).Status).To(Equal(a.dry), a.who+" dry-runs")
			Expect(call("POST", fmt.Sprintf("/api/workspaces/acme/integration/replays/%d/cancel", mine), a.token, nil).Status).
				To(Equal(a.cancel), a.who+" cancels")
			Expect(startReplay(acme, a.token, map[string]any{"filter": map[string]any{"eventType": "push"}}).Status).
				To(Equal(a.start), a.who+" starts")
			// A job this caller could not cancel ends here, so the next caller's start stays
			// under the workspace's limit of running jobs.
			if a.cancel != 200 {
				Expect(call("POST", fmt.Sprintf("/api/workspaces/acme/integration/replays/%d/cancel", mine), adminToken, nil).Status).To(Equal(200))
			}
		}

		By("a job of another workspace is no job of this one, whoever asks")
		for _, token := range []string{ana.Token, mia.Token, root.Token, adminToken} {
			Expect(job(acme, foreign, token).Status).To(Equal(404))
		}
		for _, token := range []string{ana.Token, root.Token, adminToken} {
			Expect(call("POST", fmt.Sprintf("/api/workspaces/acme/integration/replays/%d/cancel", foreign), token, nil).Status).To(Equal(404))
		}
		Expect(job(beta, own, bob.Token).Status).To(Equal(404))
		Expect(job(beta, foreign, bob.Token).JSON["state"]).To(Equal("RUNNING"), "nobody of acme cancelled it")
		Expect(call("GET", "/api/workspaces/nowhere/integration/replays", adminToken, nil).Status).To(Equal(404))
	})

	It("lists the workspace's jobs newest first, paged like every list", func(ctx SpecContext) {
		for range 3 {
			Expect(startReplay(acme, ana.Token, map[string]any{}).Status).To(Equal(202))
		}
		Expect(startReplay(beta, bob.Token, map[string]any{}).Status).To(Equal(202))
		page := call("GET", "/api/workspaces/acme/integration/replays?page=1&size=2", mia.Token, nil)
		Expect(page.Status).To(Equal(200), page.Raw)
		Expect(page.JSON["total"]).To(Equal(float64(3)))
		Expect(page.JSON["page"]).To(Equal(float64(1)))
		Expect(page.JSON["items"]).To(HaveLen(1))
		first := call("GET", "/api/workspaces/acme/integration/replays?size=2", mia.Token, nil).JSON["items"].([]any)
		Expect(first[0].(map[string]any)["id"]).To(BeNumerically(">", first[1].(map[string]any)["id"]))
		Expect(call("GET", "/api/workspaces/acme/integration/replays?size=500", mia.Token, nil).Status).To(Equal(400))
	})

	When("an operator cancels a job half-way", func() {
		It("stops after the batch in flight: the counts stop and the job is CANCELLED", func(ctx SpecContext) {
			ids := insertDeadRows(ctx, acme.ID, 50, 5, "PERMANENT:*json.SyntaxError", time.Hour)
			id := jobID(startReplay(acme, ana.Token, map[string]any{}))
			l, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			for range 2 {
				_, more, err := replayStore.ReplayBatch(ctx, l, 10, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(more).To(BeTrue())
			}

			By("a third batch is in flight (waiting for a row a single replay holds) when the cancel comes")
			tx, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = tx.Rollback(context.Background()) })
			_, err = tx.Exec(ctx, `SELECT 1 FROM provider_event WHERE id = $1 FOR UPDATE`, ids[25])
			Expect(err).NotTo(HaveOccurred())
			holder := support.BackendPID(ctx, tx)
			type batchResult struct {
				more bool
				err  error
			}
			batch := make(chan batchResult, 1)
			go func() {
				_, more, err := replayStore.ReplayBatch(ctx, l, 10, time.Minute)
				batch <- batchResult{more, err}
			}()
			support.EventuallyBlockedBy(ctx, pool, holder, 1)
			batchPID := support.Scalar[int32](ctx, pool,
				`SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))`, holder)

			cancelled := make(chan response, 1)
			go func() {
				defer GinkgoRecover()
				cancelled <- call("POST", fmt.Sprintf("/api/workspaces/acme/integration/replays/%d/cancel", id), ana.Token, nil)
			}()
			support.EventuallyBlockedBy(ctx, pool, batchPID, 1) // the cancel waits for the batch's job lock
			Expect(tx.Rollback(ctx)).To(Succeed())

			var b batchResult
			Eventually(batch).WithTimeout(settle).Should(Receive(&b))
			Expect(b.err).NotTo(HaveOccurred(), "the batch in flight finishes")
			var r response
			Eventually(cancelled).WithTimeout(settle).Should(Receive(&r))
			Expect(r.Status).To(Equal(200), r.Raw)
			Expect([]any{r.JSON["state"], r.JSON["replayed"], r.JSON["skipped"]}).To(Equal([]any{"CANCELLED", float64(30), float64(0)}),
				"the answer counts the batch that was in flight")
			Expect(r.JSON["finishedAt"]).NotTo(BeNil())

			By("the runner's next batch is fenced out and writes nothing")
			_, _, err = replayStore.ReplayBatch(ctx, l, 10, time.Minute)
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(statesOf(ctx, ids)).To(Equal(map[string]int{"QUEUED": 30, "DEAD": 20}))
			Expect(statesOf(ctx, ids[:30])).To(Equal(map[string]int{"QUEUED": 30}), "the batches went in id order")
			Expect(job(acme, id, ana.Token).JSON["replayed"]).To(Equal(float64(30)))
			_, ok, err = replayStore.ClaimReplayJob(ctx, "server-b", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse(), "a cancelled job is nobody's to run")

			again := call("POST", fmt.Sprintf("/api/workspaces/acme/integration/replays/%d/cancel", id), ana.Token, nil)
			Expect(again.Status).To(Equal(409))
			Expect(again.JSON).To(Equal(map[string]any{"error": "not-running"}))
		})
	})

	When("the server working a job is killed", func() {
		It("lets one other server take the job over when its lease runs out and finish it, replaying nothing twice", func(ctx SpecContext) {
			ids := insertDeadRows(ctx, acme.ID, 60, 6, "PERMANENT:*json.SyntaxError", time.Hour)
			id := jobID(startReplay(acme, ana.Token, map[string]any{}))

			By("server A works three batches and dies without a word")
			a, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			for range 3 {
				_, _, err := replayStore.ReplayBatch(ctx, a, 8, time.Minute)
				Expect(err).NotTo(HaveOccurred())
			}

			By("server B (its own pool and store) cannot take it while A's lease runs")
			clock := support.NewClock()
			storeB, err := replayjobs.New(other, replayjobs.Config{Clock: clock})
			Expect(err).NotTo(HaveOccurred())
			_, ok, err = storeB.ClaimReplayJob(ctx, "server-b", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse(), "one server at a time")

			By("once the lease ran out, B takes the job over; A, come back, is fenced out and writes nothing")
			clock.Advance(2 * time.Minute)
			b, ok, err := storeB.ClaimReplayJob(ctx, "server-b", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			_, _, err = storeB.ReplayBatch(ctx, b, 8, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			_, _, err = replayStore.ReplayBatch(ctx, a, 8, time.Minute)
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(statesOf(ctx, ids)).To(Equal(map[string]int{"QUEUED": 32, "DEAD": 28}), "A's three batches and B's one")

			By("B's runner finishes the job from where the last batch stopped")
			Expect(storeB.ReleaseReplay(ctx, b)).To(Succeed())
			startRunner("server-b", storeB, 8, &countingNotifier{})
			Eventually(func() any { return job(acme, id, ana.Token).JSON["state"] }).WithTimeout(settle).Should(Equal("DONE"))
			j := job(acme, id, ana.Token).JSON
			Expect([]any{j["matched"], j["replayed"], j["skipped"]}).To(Equal([]any{float64(60), float64(60), float64(0)}),
				"every row replayed once: none twice, none skipped")
			Expect(statesOf(ctx, ids)).To(Equal(map[string]int{"QUEUED": 60}))
		})

		It("hands its job back when it stops, so another server continues at once", func(ctx SpecContext) {
			insertDeadRows(ctx, acme.ID, 10, 2, "PERMANENT:*json.SyntaxError", time.Hour)
			id := jobID(startReplay(acme, ana.Token, map[string]any{}))
			a, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			_, _, err = replayStore.ReplayBatch(ctx, a, 4, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(replayStore.ReleaseReplay(ctx, a)).To(Succeed())
			b, ok, err := replayStore.ClaimReplayJob(ctx, "server-b", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(b.Epoch).To(BeNumerically(">", a.Epoch))
			_, more, err := replayStore.ReplayBatch(ctx, b, 100, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(more).To(BeFalse())
			j := job(acme, id, ana.Token).JSON
			Expect([]any{j["state"], j["replayed"], j["skipped"]}).To(Equal([]any{"DONE", float64(10), float64(0)}))
		})
	})

	When("live dispatch runs", func() {
		It("keeps handling live rows while a batch is held up, since a batch locks only the DEAD rows it replays", func(ctx SpecContext) {
			ids := insertDeadRows(ctx, acme.ID, 10, 2, "PERMANENT:*json.SyntaxError", time.Hour)
			handled := make(chan int64, 100)
			reg := consumer.NewRegistry()
			Expect(reg.Register(githubProvider, "issues", ports.HandlerFunc(func(_ context.Context, d ports.Dispatch) error {
				handled <- d.Delivery.ID()
				return nil
			}))).To(Succeed())
			id := jobID(startReplay(acme, ana.Token, map[string]any{}))
			l, ok, err := replayStore.ClaimReplayJob(ctx, "server-a", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())

			By("a batch waits for a DEAD row a single replay holds, with its other rows locked")
			tx, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = tx.Rollback(context.Background()) })
			_, err = tx.Exec(ctx, `SELECT 1 FROM provider_event WHERE id = $1 FOR UPDATE`, ids[9])
			Expect(err).NotTo(HaveOccurred())
			batch := make(chan error, 1)
			go func() {
				_, _, err := replayStore.ReplayBatch(ctx, l, 10, time.Minute)
				batch <- err
			}()
			support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, tx), 1)

			By("a live row of the same scopes and one of another are claimed and handled meanwhile")
			signal := startClaimers(ctx, reg)
			sameScope := insertRow(ctx, other, row{Workspace: acme.ID, Repo: "1000"})
			otherScope := insertRow(ctx, other, row{Workspace: acme.ID, Repo: "77"})
			signal.Notify()
			var got []int64
			for range 2 {
				var h int64
				Eventually(handled).WithTimeout(settle).Should(Receive(&h))
				got = append(got, h)
			}
			Expect(got).To(ConsistOf(sameScope, otherScope))
			Consistently(batch).WithTimeout(100*time.Millisecond).ShouldNot(Receive(), "the batch is still held up")

			Expect(tx.Rollback(ctx)).To(Succeed())
			Eventually(batch).WithTimeout(settle).Should(Receive(BeNil()))
			Expect(job(acme, id, ana.Token).JSON["state"]).To(Equal("DONE"))
		})

		It("replays thousands of DEAD rows in batches while the claimers handle them and live rows, each scope in order, each row audited", func(ctx SpecContext) {
			const rows, repos = 2000, 40
			ids := insertDeadRows(ctx, acme.ID, rows, repos, "PERMANENT:*json.SyntaxError", time.Hour)
			dead := map[int64]bool{}
			for _, id := range ids {
				dead[id] = true
			}

			var (
				mu      sync.Mutex
				handled = map[string][]int64{} // scope → ids in the order their handler ran
				counts  = map[int64]int{}
			)
			reg := consumer.NewRegistry()
			Expect(reg.Register(githubProvider, "issues", ports.HandlerFunc(func(_ context.Context, d ports.Dispatch) error {
				mu.Lock()
				defer mu.Unlock()
				handled[d.Delivery.Scope().String()] = append(handled[d.Delivery.Scope().String()], d.Delivery.ID())
				counts[d.Delivery.ID()]++
				return nil
			}))).To(Succeed())
			signal := startClaimers(ctx, reg)

			By("live rows keep arriving in other scopes while the job runs")
			liveCtx, stopLive := context.WithCancel(ctx)
			liveDone := make(chan []int64, 1)
			go func() {
				defer GinkgoRecover()
				var live []int64
				// Sent however the loop ends, so the spec never waits for a goroutine that failed;
				// each insert runs under the spec's context, not the one that stops the loop, so
				// stopping between a check and an insert cannot fail the insert.
				defer func() { liveDone <- live }()
				for i := 0; liveCtx.Err() == nil && i < 200; i++ {
					live = append(live, insertRow(ctx, other, row{Workspace: acme.ID, Repo: fmt.Sprint(5000 + i%7)}))
					signal.Notify()
					time.Sleep(5 * time.Millisecond)
				}
			}()

			id := jobID(startReplay(acme, ana.Token, map[string]any{"filter": map[string]any{"errorClass": "PERMANENT:*json.SyntaxError"}}))
			startRunner("server-a", replayStore, 100, signal)
			Eventually(func() any { return job(acme, id, ana.Token).JSON["state"] }).WithTimeout(2 * time.Minute).Should(Equal("DONE"))
			stopLive()
			live := <-liveDone
			Eventually(func() map[string]int { return statesOf(ctx, append(append([]int64{}, ids...), live...)) }).
				WithTimeout(2 * time.Minute).Should(Equal(map[string]int{"DONE": rows + len(live)}))

			j := job(acme, id, ana.Token).JSON
			Expect([]any{j["matched"], j["replayed"], j["skipped"]}).To(Equal([]any{float64(rows), float64(rows), float64(0)}))
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				Expect(counts[id]).To(Equal(1), "row %d is handled once", id)
			}
			for scope, order := range handled {
				var replayed []int64
				for _, id := range order {
					if dead[id] {
						replayed = append(replayed, id)
					}
				}
				for i := 1; i < len(replayed); i++ {
					Expect(replayed[i]).To(BeNumerically(">", replayed[i-1]), "scope %s handles its replayed rows in id order", scope)
				}
			}
			for id, r := range replayedRowsOf(ctx, ids) {
				Expect(r.ReplayedBy).To(HaveValue(Equal(ana.ID)), "row %d names the requesting account", id)
			}
		})
	})
})

// startClaimers runs a consumer (a server's claimers) on the server's inbox store until the
// spec ends and returns its wake signal.
func startClaimers(ctx context.Context, reg ports.HandlerRegistry) *consumer.Signal {
	GinkgoHelper()
	st, err := inboxstore.New(pool, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
	signal := consumer.NewSignal()
	c, err := consumer.New(consumer.Config{
		Owner: "server-a", Claimers: 4, LeaseDuration: 30 * time.Second, RenewInterval: 5 * time.Second,
		ReaperInterval: time.Second, PollInterval: 50 * time.Millisecond, RetryBaseDelay: 10 * time.Millisecond,
		RetryMaxDelay: 40 * time.Millisecond, ShutdownGrace: 2 * time.Second, ShutdownTimeout: 5 * time.Second,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 300 * time.Millisecond, GaugeInterval: time.Second,
		RetentionInterval: time.Hour,
	}, st, reg, signal, support.NewClock(), support.Logger{}, noMetrics{})
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
	})
	return signal
}

// noMetrics discards the consumer's metrics.
type noMetrics struct{}

func (noMetrics) Handled(string, string)                                 {}
func (noMetrics) Retried(string, string)                                 {}
func (noMetrics) Dropped(string, string)                                 {}
func (noMetrics) RetentionFailed()                                       {}
func (noMetrics) HandlerDuration(context.Context, string, time.Duration) {}
func (noMetrics) InboxRows(string, int64)                                {}
func (noMetrics) OldestQueuedAge(time.Duration)                          {}

var _ ports.ConsumerMetrics = noMetrics{}
