package backfill_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubsync"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// A repository of 250 issues (three pages of the issues list, with two pull requests' issue
// sides among them), two pull requests, three labels and one milestone: the backfill commits
// the repository, labels, milestones, three issue pages and one pull request page.
const (
	issueCount  = 250
	wantItems   = 1 + 3 + 1 + issueCount + 2
	wantPages   = 1 + 1 + 1 + 3 + 1
	appRepoID   = 4242
	docsRepoID  = 4343
	appRepoBase = 1_000_000
	docsBase    = 2_000_000
)

// counter reads a counter of the provider from the server's /metrics exposition.
func counter(m *telemetry.Metrics, name, provider string) float64 {
	GinkgoHelper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	prefix := name + `{provider="` + provider + `"} `
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			Expect(err).NotTo(HaveOccurred())
			return f
		}
	}
	Fail(fmt.Sprintf("no %s{provider=%q} on /metrics", name, provider))
	return 0
}

var _ = Describe("Backfill of a GitHub repository", func() {
	var (
		gh   *fakeGitHub
		acme int64
		conn int64
		a    server
	)

	BeforeEach(func(ctx SpecContext) {
		gh = newFakeGitHub(patToken)
		gh.add(history(appRepoID, "acme/app", appRepoBase, issueCount))
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		conn = patConnection(ctx, acme, patToken)
		a = newServer("server-a", pool, jobs, gh)
	})

	It("queues a job when a repository is subscribed and lands the whole history in the mirror, page by page", func(ctx SpecContext) {
		subscribe(ctx, acme, conn, appRepoID, "acme/app")
		Expect(job(ctx, conn, appRepoID).State).To(Equal("QUEUED"))

		drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })

		j := job(ctx, conn, appRepoID)
		Expect(j.Items).To(BeEquivalentTo(wantItems))
		Expect(j.Pages).To(BeEquivalentTo(wantPages))
		Expect(j.LastError).To(BeNil())
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2`, acme, appRepoID)).To(Equal(issueCount))
		Expect(count(ctx, `SELECT count(*) FROM github_pull_request WHERE workspace_id = $1`, acme)).To(Equal(2))
		Expect(count(ctx, `SELECT count(*) FROM github_label WHERE workspace_id = $1`, acme)).To(Equal(3))
		Expect(count(ctx, `SELECT count(*) FROM github_milestone WHERE workspace_id = $1`, acme)).To(Equal(1))
		// The pull requests' issue sides are not issues.
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND title = 'PR side'`, acme)).To(BeZero())
		// Every issue page was read once, with the PAT; the issues list has three pages.
		Expect(gh.count("GET /repos/acme/app/issues?page=")).To(Equal(3))
		Expect(gh.queries).To(ContainElement(And(HavePrefix("/repos/acme/app/issues?"),
			ContainSubstring("state=all"), ContainSubstring("per_page=100"), ContainSubstring("page=3"))))
		Expect(gh.queries).To(ContainElement(And(HavePrefix("/repos/acme/app/pulls?"), ContainSubstring("state=all"))))
		Expect(gh.badAuth).To(BeZero())
		Expect(counter(a.metrics, "sync_items_total", "github")).To(BeEquivalentTo(wantItems))
		Expect(counter(a.metrics, "sync_pages_total", "github")).To(BeEquivalentTo(wantPages))
		Expect(counter(a.metrics, "sync_failures_total", "github")).To(BeZero())
	})

	It("exports the sync counters at 0 for every provider before any sync", func() {
		for _, p := range []string{"github", "gitlab", "slack", "outline"} {
			Expect(counter(a.metrics, "sync_items_total", p)).To(BeZero())
			Expect(counter(a.metrics, "sync_pages_total", p)).To(BeZero())
			Expect(counter(a.metrics, "sync_failures_total", p)).To(BeZero())
		}
	})

	It("waits out a rate-limited page and retries it without using the page's budget", func(ctx SpecContext) {
		gh.rateLimitOnce = "/repos/acme/app/issues?page=2"
		subscribe(ctx, acme, conn, appRepoID, "acme/app")

		drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })

		Expect(gh.count("GET /repos/acme/app/issues?page=2")).To(Equal(2))
		j := job(ctx, conn, appRepoID)
		Expect(j.Items).To(BeEquivalentTo(wantItems))
		Expect(j.Pages).To(BeEquivalentTo(wantPages))
		Expect(counter(a.metrics, "sync_failures_total", "github")).To(BeEquivalentTo(1))
	})

	It("reads a repository named only by id through GET /repositories/{id}", func(ctx SpecContext) {
		gh.mu.Lock()
		gh.byID = map[int64]string{appRepoID: "acme/app"}
		gh.mu.Unlock()
		subscribe(ctx, acme, conn, appRepoID, "")

		drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(issueCount))
	})

	It("stops a job whose token GitHub refuses with FAILED and a classified reason", func(ctx SpecContext) {
		ws := support.NewWorkspace(ctx, manage, "other").ID
		other := patConnection(ctx, ws, "ghp_revoked")
		subscribe(ctx, ws, other, appRepoID, "acme/app")

		drainUntil(ctx, a, func() bool { return job(ctx, other, appRepoID).State == "FAILED" })
		j := job(ctx, other, appRepoID)
		Expect(j.LastError).To(HaveValue(Equal("provider-refused")))
		Expect(j.Attempt).To(Equal(testRetry.MaxAttempts))
		Expect(count(ctx, `SELECT count(*) FROM github_issue`)).To(BeZero())
	})

	When("a page does not parse", func() {
		It("retries the page, then FAILS the job with lastError, while the other jobs and the inbox carry on", func(ctx SpecContext) {
			gh.add(history(docsRepoID, "acme/docs", docsBase, 30))
			gh.broken = "/repos/acme/app/issues?page=2"
			subscribe(ctx, acme, conn, appRepoID, "acme/app")
			subscribe(ctx, acme, conn, docsRepoID, "acme/docs")

			drainUntil(ctx, a, func() bool {
				return job(ctx, conn, appRepoID).State == "FAILED" && job(ctx, conn, docsRepoID).State == "DONE"
			})

			broken := job(ctx, conn, appRepoID)
			Expect(broken.LastError).To(HaveValue(Equal("provider-unreadable")))
			Expect(broken.Attempt).To(Equal(testRetry.MaxAttempts))
			Expect(gh.count("GET /repos/acme/app/issues?page=2")).To(Equal(testRetry.MaxAttempts))
			// The pages before it stay committed; the cursor points at the failed page.
			Expect(broken.Cursor).To(HaveValue(Equal("issues:2")))
			// The first page held 100 entries, one of them a pull request's issue side.
			Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE repository_id = $1`, appRepoID)).To(Equal(99))
			Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE repository_id = $1`, docsRepoID)).To(Equal(30))
			Expect(count(ctx, `SELECT count(*) FROM provider_event`)).To(BeZero())
			Expect(counter(a.metrics, "sync_failures_total", "github")).To(BeEquivalentTo(testRetry.MaxAttempts))
			// No message or token in what is stored about the failure.
			Expect(*broken.LastError).NotTo(ContainSubstring(patToken))
		})
	})

	When("a newer webhook races an older page", func() {
		It("keeps the webhook's data", func(ctx SpecContext) {
			subscribe(ctx, acme, conn, appRepoID, "acme/app")
			gh.holdFirst("/repos/acme/app/issues?page=1")
			done := runUntilHeld(ctx, gh.held, a.runner.RunOne)

			// While the page (issue 1 as of 2024-02-02) is on its way, an "edited" webhook
			// with a newer timestamp commits.
			reg := githubHandlers(mirror)
			edited := issue(appRepoBase, appRepoBase+1, 1, "Renamed by a webhook", "2024-05-05T00:00:00Z")
			payload := fmt.Sprintf(`{"action":"edited","issue":%s,"repository":%s}`, jsonOf(edited),
				jsonOf(repository(appRepoID, "acme/app", 77)))
			d := support.LeasedEvent(ctx, pool, acme, github.Provider, "issues", "github:spec", payload)
			Expect(d.Handle(ctx, reg)).To(Succeed())

			close(gh.release)
			Eventually(done).WithContext(ctx).Should(BeClosed())
			drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })

			Expect(support.Scalar[string](ctx, pool, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = $2`,
				acme, appRepoBase+1)).To(Equal("Renamed by a webhook"))
			Expect(support.Scalar[string](ctx, pool, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = $2`,
				acme, appRepoBase+2)).To(Equal("Issue 2"))
		})

		It("lets a page newer than the stored webhook data win", func(ctx SpecContext) {
			reg := githubHandlers(mirror)
			old := issue(appRepoBase, appRepoBase+3, 3, "Old title", "2024-01-15T00:00:00Z")
			payload := fmt.Sprintf(`{"action":"opened","issue":%s,"repository":%s}`, jsonOf(old),
				jsonOf(repository(appRepoID, "acme/app", 77)))
			Expect(support.LeasedEvent(ctx, pool, acme, github.Provider, "issues", "github:spec", payload).Handle(ctx, reg)).To(Succeed())

			subscribe(ctx, acme, conn, appRepoID, "acme/app")
			drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })
			Expect(support.Scalar[string](ctx, pool, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = $2`,
				acme, appRepoBase+3)).To(Equal("Issue 3"))
		})
	})

	When("a server dies mid-page", func() {
		It("lets another server take the lease over and redo the page, with no duplicate and no loss", func(ctx SpecContext) {
			// Server B's clock is the one that moves: its store sees A's lease run out.
			clockB := support.NewClock()
			jobsLate, err := syncjobs.New(poolB, syncjobs.Config{Clock: clockB})
			Expect(err).NotTo(HaveOccurred())
			b := newServer("server-b", poolB, jobsLate, gh)
			subscribe(ctx, acme, conn, appRepoID, "acme/app")
			gh.holdFirst("/repos/acme/app/issues?page=2")

			done := runUntilHeld(ctx, gh.held, a.runner.RunOne)
			Expect(job(ctx, conn, appRepoID).Cursor).To(HaveValue(Equal("issues:2")))

			// Server A stalls inside its page read; on B's clock its lease runs out.
			clockB.Advance(specLeaseTime + time.Second)
			Expect(b.runner.Drain(ctx)).To(Succeed())
			Expect(job(ctx, conn, appRepoID).State).To(Equal("DONE"))

			// A wakes up with its page: the fence refuses it, nothing of it commits.
			close(gh.release)
			Eventually(done).WithContext(ctx).Should(BeClosed())

			j := job(ctx, conn, appRepoID)
			Expect(j.State).To(Equal("DONE"))
			Expect(j.Items).To(BeEquivalentTo(wantItems))
			Expect(j.Pages).To(BeEquivalentTo(wantPages))
			Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(issueCount))
			Expect(count(ctx, `SELECT count(DISTINCT number) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(issueCount))
			Expect(gh.count("GET /repos/acme/app/issues?page=2")).To(Equal(2))
			Expect(counter(a.metrics, "sync_pages_total", "github")).To(BeEquivalentTo(4)) // repository, labels, milestones, issues 1
			Expect(counter(b.metrics, "sync_pages_total", "github")).To(BeEquivalentTo(wantPages - 4))
		})
	})

	Describe("the sync API", func() {
		var (
			base                             string
			client                           *httpClient
			adminTok, memberTok, outsiderTok string
			otherConn                        int64
		)

		BeforeEach(func(ctx SpecContext) {
			base, client = api()
			adminTok = support.NewAccount(ctx, manage, "ana", false, "acme", "ADMIN").Token
			memberTok = support.NewAccount(ctx, manage, "mo", false, "acme", "MEMBER").Token
			otherWS := support.NewWorkspace(ctx, manage, "other").ID
			outsiderTok = support.NewAccount(ctx, manage, "olga", false, "other", "ADMIN").Token
			otherConn = patConnection(ctx, otherWS, patToken)
			subscribe(ctx, acme, conn, appRepoID, "acme/app")
		})

		url := func(slug string, id int64) string {
			return fmt.Sprintf("%s/api/workspaces/%s/connections/%d/sync", base, slug, id)
		}

		It("shows a long sync's pages and items as it goes, then DONE, and the read API serves the backfilled mirror", func(ctx SpecContext) {
			status, body := client.call(http.MethodGet, url("acme", conn), memberTok)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(HaveKeyWithValue("state", "RUNNING"))
			Expect(body["resources"]).To(ConsistOf(And(HaveKeyWithValue("id", "4242"), HaveKeyWithValue("state", "QUEUED"),
				HaveKeyWithValue("pages", BeEquivalentTo(0)), HaveKeyWithValue("startedAt", BeNil()))))

			gh.holdFirst("/repos/acme/app/issues?page=3")
			done := runUntilHeld(ctx, gh.held, a.runner.RunOne)
			status, body = client.call(http.MethodGet, url("acme", conn), memberTok)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(HaveKeyWithValue("state", "RUNNING"))
			Expect(body["resources"]).To(ConsistOf(And(HaveKeyWithValue("state", "RUNNING"),
				HaveKeyWithValue("pages", BeEquivalentTo(5)), HaveKeyWithValue("items", BeEquivalentTo(1+3+1+198)), /* two issue sides of pull requests skipped */
				HaveKeyWithValue("startedAt", Not(BeNil())), HaveKeyWithValue("finishedAt", BeNil()))))
			close(gh.release)
			Eventually(done).WithContext(ctx).Should(BeClosed())

			status, body = client.call(http.MethodGet, url("acme", conn), adminTok)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(HaveKeyWithValue("state", "DONE"))
			Expect(body["resources"]).To(ConsistOf(And(HaveKeyWithValue("type", "repository"), HaveKeyWithValue("state", "DONE"),
				HaveKeyWithValue("pages", BeEquivalentTo(wantPages)), HaveKeyWithValue("items", BeEquivalentTo(wantItems)),
				HaveKeyWithValue("finishedAt", Not(BeNil())), HaveKeyWithValue("lastError", BeNil()))))

			status, body = client.call(http.MethodGet, base+"/api/workspaces/acme/repositories/4242/issues?size=1", memberTok)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(HaveKeyWithValue("total", BeEquivalentTo(issueCount)))
		})

		It("restarts every backfill from its first page on POST, answering 202 with the progress", func(ctx SpecContext) {
			drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })
			status, body := client.call(http.MethodPost, url("acme", conn), adminTok)
			Expect(status).To(Equal(http.StatusAccepted))
			Expect(body).To(HaveKeyWithValue("state", "RUNNING"))
			Expect(body["resources"]).To(ConsistOf(And(HaveKeyWithValue("state", "QUEUED"), HaveKeyWithValue("pages", BeEquivalentTo(0)))))
			drainUntil(ctx, a, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })
			Expect(gh.count("GET /repos/acme/app/issues?page=1")).To(Equal(2))
			Expect(job(ctx, conn, appRepoID).Pages).To(BeEquivalentTo(wantPages))
		})

		It("answers IDLE for a connection without syncable subscriptions and 409 for one that is not ACTIVE", func(ctx SpecContext) {
			idle := patConnection(ctx, acme, patToken)
			status, body := client.call(http.MethodGet, url("acme", idle), memberTok)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(Equal(map[string]any{"state": "IDLE", "resources": []any{}}))

			_, err := pool.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, idle)
			Expect(err).NotTo(HaveOccurred())
			status, body = client.call(http.MethodPost, url("acme", idle), adminTok)
			Expect(status).To(Equal(http.StatusConflict))
			Expect(body).To(HaveKeyWithValue("error", "connection-not-active"))
		})

		It("refuses callers who may not see or start the sync: 401, 403, 404", func(ctx SpecContext) {
			for _, c := range []struct {
				method, path, token string
				want                int
			}{
				{http.MethodGet, url("acme", conn), "", http.StatusUnauthorized},
				{http.MethodPost, url("acme", conn), "not-a-token", http.StatusUnauthorized},
				{http.MethodGet, url("acme", conn), outsiderTok, http.StatusForbidden},
				{http.MethodPost, url("acme", conn), memberTok, http.StatusForbidden},
				{http.MethodGet, url("nowhere", conn), memberTok, http.StatusNotFound},
				// Another workspace's connection is not found in this one, for reading or starting.
				{http.MethodGet, url("acme", otherConn), memberTok, http.StatusNotFound},
				{http.MethodPost, url("acme", otherConn), adminTok, http.StatusNotFound},
				// The instance administrator reads and starts every workspace's.
				{http.MethodGet, url("acme", conn), adminToken, http.StatusOK},
				{http.MethodPost, url("other", otherConn), adminToken, http.StatusAccepted},
			} {
				status, _ := client.call(c.method, c.path, c.token)
				Expect(status).To(Equal(c.want), "%s %s", c.method, c.path)
			}
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE state = 'RUNNING'`)).To(BeZero())
		})
	})
})

func jsonOf(v any) string {
	GinkgoHelper()
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("Backfill through a GitHub App installation", func() {
	var (
		gh   *fakeGitHub
		acme int64
		conn int64
		r    *backfill.Runner
	)

	BeforeEach(func(ctx SpecContext) {
		gh = newFakeGitHub("no-static-token")
		gh.add(history(appRepoID, "acme/app", appRepoBase, 120))
		gh.add(history(docsRepoID, "acme/docs", docsBase, 30))
		gh.orgs = map[string][]string{"acme": {"acme/app", "acme/docs"}}
		gh.installations[9001] = "ghs_installation_9001"
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, 'GITHUB_APP', 'GITHUB', 'ACTIVE', 'https://github.com', '{"installationId":9001}', '9001') RETURNING id`, acme).
			Scan(&conn)).To(Succeed())

		key, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		app, err := githubapi.NewApp(githubapi.AppConfig{BaseURL: gh.URL(), AppID: "42", Key: key})
		Expect(err).NotTo(HaveOccurred())
		liveSecrets, err := managementstore.NewLiveSecrets(pool, box)
		Expect(err).NotTo(HaveOccurred())
		creds := &githubapi.Credentials{App: app, Store: liveSecrets}
		client, err := githubapi.New(githubapi.Config{BaseURL: gh.URL(), Token: creds.Token})
		Expect(err).NotTo(HaveOccurred())
		src, err := githubsync.New(client, mirror)
		Expect(err).NotTo(HaveOccurred())
		r = newRunner("server-a", jobs, telemetry.NewMetrics(), src)
	})

	It("reads with the installation token the App minted for the workspace's installation", func(ctx SpecContext) {
		subscribe(ctx, acme, conn, appRepoID, "acme/app")
		drainUntil(ctx, server{runner: r}, func() bool { return job(ctx, conn, appRepoID).State == "DONE" })
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(120))
		Expect(gh.badAuth).To(BeZero())
		// One token minted for the whole sync (cached), every read carried it.
		Expect(gh.count("POST /app/installations/9001/access_tokens")).To(Equal(1))
	})

	It("backfills every repository of a subscribed organization, one after another", func(ctx SpecContext) {
		_, err := pool.Exec(ctx, `
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
			VALUES ($1, $2, 'GITHUB', 'organization', '77', 'acme')`, conn, acme)
		Expect(err).NotTo(HaveOccurred())
		var state string
		var items, pages int64
		drainUntil(ctx, server{runner: r}, func() bool {
			Expect(pool.QueryRow(ctx, `SELECT state, items, pages FROM sync_job WHERE connection_id = $1 AND resource_type = 'organization'`, conn).
				Scan(&state, &items, &pages)).To(Succeed())
			return state == "DONE"
		})
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2`, acme, appRepoID)).To(Equal(120))
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2`, acme, docsRepoID)).To(Equal(30))
		Expect(count(ctx, `SELECT count(*) FROM github_repository WHERE workspace_id = $1`, acme)).To(Equal(2))
		// Each repository: itself, 3 labels, 1 milestone, its issues, 2 pull requests.
		Expect(items).To(BeEquivalentTo((1 + 3 + 1 + 120 + 2) + (1 + 3 + 1 + 30 + 2)))
		Expect(pages).To(BeEquivalentTo((1 + 1 + 1 + 2 + 1) + (1 + 1 + 1 + 1 + 1)))
		Expect(gh.badAuth).To(BeZero())
	})
})

var _ = Describe("The runner as a server runs it", func() {
	var (
		gh   *fakeGitHub
		acme int64
		conn int64
		r    *backfill.Runner
	)

	BeforeEach(func(ctx SpecContext) {
		gh = newFakeGitHub(patToken)
		gh.add(history(appRepoID, "acme/app", appRepoBase, 120))
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		conn = patConnection(ctx, acme, patToken)
		src := githubSource(gh)
		// An hour's poll: only a wake makes an idle worker look for jobs within the spec.
		var err error
		r, err = backfill.New(backfill.Config{Owner: "server-a", Workers: 2, PollInterval: time.Hour,
			LeaseDuration: specLeaseTime, CallTimeout: 5 * time.Second, Retry: testRetry},
			jobs, []contract.SyncSource{src}, telemetry.NewMetrics(), support.Logger{}, clock{})
		Expect(err).NotTo(HaveOccurred())
	})

	run := func(ctx context.Context) (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(r.Run(runCtx)).To(Succeed())
		}()
		return func() {
			cancel()
			Eventually(done).Should(BeClosed())
		}
	}

	It("works jobs in the background and starts a restarted sync when this server's API wakes it", func(ctx SpecContext) {
		stop := run(ctx)
		defer stop()
		subscribe(ctx, acme, conn, appRepoID, "acme/app")
		svc, err := backfill.NewService(jobs, r.Wake)
		Expect(err).NotTo(HaveOccurred())
		_, err = svc.Restart(ctx, acme, conn)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return job(ctx, conn, appRepoID).State }).WithContext(ctx).WithTimeout(20 * time.Second).
			Should(Equal("DONE"))
	})

	It("hands back a job its claim leased while the server was stopping, so it is not left RUNNING until the lease runs out", func(ctx SpecContext) {
		subscribe(ctx, acme, conn, appRepoID, "acme/app")
		// The stop comes while the claim statement is on its way: the database still runs it
		// and commits the lease, and a claim on the cancelled context would only hear
		// "context canceled" (stoppingClaims plays that out deterministically).
		runCtx, stop := context.WithCancel(ctx)
		late := &stoppingClaims{SyncJobStore: jobs, stop: stop}
		lr, err := backfill.New(backfill.Config{Owner: "server-a", LeaseDuration: specLeaseTime, CallTimeout: 5 * time.Second,
			Retry: testRetry}, late, []contract.SyncSource{githubSource(gh)}, telemetry.NewMetrics(), support.Logger{}, clock{})
		Expect(err).NotTo(HaveOccurred())
		claimed, err := lr.RunOne(runCtx)
		Expect(err).NotTo(HaveOccurred())
		Expect(claimed).To(BeTrue())
		Expect(late.committed).To(BeTrue(), "the claim committed a lease")

		j := job(ctx, conn, appRepoID)
		Expect(j.State).To(Equal("QUEUED"), "the lease is handed back at once")
		Expect(j.Attempt).To(BeZero())
		Expect(gh.count("GET /repos/acme/app")).To(BeZero(), "nothing is read after the stop")
		b := newServer("server-b", poolB, jobsB, gh)
		Expect(b.runner.Drain(ctx)).To(Succeed())
		Expect(job(ctx, conn, appRepoID).State).To(Equal("DONE"))
	})

	It("hands its lease back when the server stops mid-page, so the page is redone at once elsewhere", func(ctx SpecContext) {
		subscribe(ctx, acme, conn, appRepoID, "acme/app")
		gh.holdFirst("/repos/acme/app/issues?page=1")
		stop := run(ctx)
		Eventually(gh.held).WithContext(ctx).Should(BeClosed())
		stop() // SIGTERM: the read is cancelled, the lease released without counting
		j := job(ctx, conn, appRepoID)
		Expect(j.State).To(Equal("QUEUED"))
		Expect(j.Attempt).To(BeZero())
		Expect(j.Cursor).To(HaveValue(Equal("issues:1")))
		Expect(count(ctx, `SELECT count(*) FROM github_issue`)).To(BeZero())

		b := newServer("server-b", poolB, jobsB, gh)
		Expect(b.runner.Drain(ctx)).To(Succeed())
		Expect(job(ctx, conn, appRepoID).State).To(Equal("DONE"))
		Expect(count(ctx, `SELECT count(*) FROM github_issue`)).To(Equal(120))
	})
})

// stoppingClaims is a job store whose claim sees the server stop while the statement is in
// flight: it cancels the runner's context, runs the claim to its commit as the database would,
// and answers "context canceled" when the context it was given has ended, as pgx does.
type stoppingClaims struct {
	ports.SyncJobStore
	stop      context.CancelFunc
	committed bool
}

func (s *stoppingClaims) ClaimSyncJob(ctx context.Context, providers []string, owner string, lease time.Duration) (ports.SyncJob, ports.SyncLease, bool, error) {
	s.stop()
	job, l, found, err := s.SyncJobStore.ClaimSyncJob(context.WithoutCancel(ctx), providers, owner, lease)
	s.committed = found && err == nil
	if ctx.Err() != nil {
		return ports.SyncJob{}, ports.SyncLease{}, false, ctx.Err()
	}
	return job, l, found, err
}

// githubSource is a GitHub sync source of the fake, reading with the connection's stored PAT.
func githubSource(gh *fakeGitHub) contract.SyncSource {
	GinkgoHelper()
	liveSecrets, err := managementstore.NewLiveSecrets(pool, box)
	Expect(err).NotTo(HaveOccurred())
	client, err := githubapi.New(githubapi.Config{BaseURL: gh.URL(), Token: (&githubapi.Credentials{Store: liveSecrets}).Token})
	Expect(err).NotTo(HaveOccurred())
	src, err := githubsync.New(client, mirror)
	Expect(err).NotTo(HaveOccurred())
	return src
}
