package operators_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// octocat's payloads, as GitHub sends them: the person as sender, as an issue's user, in an
// installation event.
const (
	octocatSender = `{"action":"opened","sender":{"login":"octocat","id":583231,"type":"User"}}`
	octocatNested = `{"action":"closed","issue":{"number":1,"user":{"login":"octocat","id":583231}},"sender":{"login":"hubot","id":1}}`
	hubotSender   = `{"action":"opened","sender":{"login":"hubot","id":1,"type":"User"}}`
	// A repository whose id equals octocat's id, and a bare id field: no person is named.
	repositoryOnly = `{"action":"opened","repository":{"id":583231,"full_name":"octo/hello"},"repository_id":583231}`
)

var _ = Describe("Person erasure of the inbox stores", func() {
	var acme, globex workspaceFixture

	octocat := map[string]any{
		"provider": "GITHUB", "sourceServerUrl": githubNamespace,
		"identities": []map[string]any{{"id": "583231", "login": "octocat"}},
	}

	BeforeEach(func(ctx SpecContext) {
		acme, globex = newWorkspace(ctx, "acme"), newWorkspace(ctx, "globex")
		// Registered first, so it runs last: after a spec's own cleanups released what a pass
		// may wait for, no request may still be running when the next spec truncates.
		DeferCleanup(func(ctx SpecContext) {
			Eventually(func(ctx context.Context) int {
				var n int
				Expect(pool.QueryRow(ctx, `SELECT count(*) FROM inbox_erasure WHERE state = 'RUNNING'`).Scan(&n)).To(Succeed())
				return n
			}).WithContext(ctx).WithTimeout(settle).Should(BeZero())
		})
	})

	start := func(body any) int64 {
		GinkgoHelper()
		r := call("POST", "/api/admin/erasures", adminToken, body)
		Expect(r.Status).To(Equal(http.StatusAccepted), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("state", "RUNNING"))
		return int64(r.JSON["id"].(float64))
	}
	progress := func(id int64) map[string]any {
		GinkgoHelper()
		r := call("GET", fmt.Sprintf("/api/admin/erasures/%d", id), adminToken, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		return r.JSON
	}
	awaitDone := func(id int64) []any {
		GinkgoHelper()
		Eventually(func() any { return progress(id)["state"] }).WithTimeout(settle).WithPolling(20 * time.Millisecond).
			Should(Equal("DONE"))
		return progress(id)["receipts"].([]any)
	}
	receipt := func(store string, pass, deleted int) map[string]any {
		return map[string]any{"store": store, "pass": float64(pass), "deleted": float64(deleted), "at": MatchRegexp(`Z$`),
			"failedRows": BeEmpty()}
	}
	matchReceipts := func(want ...map[string]any) OmegaMatcher {
		ms := make([]any, len(want))
		for i, w := range want {
			fields := []OmegaMatcher{HaveLen(5)}
			for k, v := range w {
				fields = append(fields, HaveKeyWithValue(k, v))
			}
			ms[i] = SatisfyAll(fields...)
		}
		return HaveExactElements(ms...)
	}
	boundary := func(ctx context.Context, id int64, store string, pass int) int64 {
		GinkgoHelper()
		var b int64
		Expect(pool.QueryRow(ctx, `SELECT boundary FROM inbox_erasure_receipt WHERE erasure_id = $1 AND store = $2 AND pass = $3`,
			id, store, pass).Scan(&b)).To(Succeed())
		return b
	}

	It("deletes the person's rows in every state and both stores, with their steps, and leaves everything else", func(ctx SpecContext) {
		queued := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "1", Payload: octocatSender})
		leased := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "2", State: "LEASED", Payload: octocatNested})
		done := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "3", State: "DONE", Payload: octocatNested})
		dead := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "4", State: "DEAD", Payload: octocatSender})
		theirs := insertRow(ctx, pool, row{Workspace: globex.ID, Payload: octocatSender})
		installation := insertRow(ctx, pool, row{Payload: octocatSender})
		addStep(ctx, leased, "issue-write")
		addStep(ctx, done, "issue-write")
		addStep(ctx, dead, "issue-write")

		someoneElse := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "5", Payload: hubotSender})
		otherNamespace := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "6", Payload: octocatSender, Namespace: "https://ghe.example.com"})
		bareID := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "7", Payload: repositoryOnly})
		addStep(ctx, someoneElse, "issue-write")

		id := start(octocat)
		Expect(awaitDone(id)).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 5), receipt("installation-inbox", 1, 1)))

		Expect(existing(ctx, queued, leased, done, dead, theirs, installation)).To(BeEmpty())
		Expect(stepCount(ctx, leased, done, dead)).To(BeZero(), "steps cascade")
		Expect(existing(ctx, someoneElse, otherNamespace, bareID)).To(Equal([]int64{someoneElse, otherNamespace, bareID}))
		Expect(stepCount(ctx, someoneElse)).To(Equal(1))
		Expect(fenceRaised(ctx)).To(BeFalse())

		// The handler still running on the erased LEASED row stops at its next write.
		err := box.Write(dispatch.BindDispatch(ctx, ports.Claimed{Delivery: inbox.RestoreDelivery(inbox.Stored{
			ID: leased, State: inbox.Leased, LeaseEpoch: 1, LeasedUntil: time.Now().Add(time.Minute)})}),
			func(context.Context, ports.Tx) error { return nil })
		Expect(err).To(MatchError(inbox.ErrErased))
	})

	When("one row of others' deliveries cannot be rewritten", func() {
		It("rewrites the others, reports the row by id and stays RUNNING, and a later pass rewrites it", func(ctx SpecContext) {
			mention := func(n int) string {
				return fmt.Sprintf(`{"action":"created","comment":{"id":%d,"body":"thanks @octocat"},"sender":{"login":"hubot","id":1}}`, n)
			}
			victims := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "1", Payload: octocatSender})
			before := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "2", Payload: mention(1)})
			stuck := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "3", State: "DONE", Payload: mention(2)})
			after := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "4", Payload: mention(3)})
			installation := insertRow(ctx, pool, row{Payload: octocatSender})

			// The database refuses this one row's new payload (as a constraint or a trigger of
			// a later migration could); every other row's rewrite must still commit.
			_, err := pool.Exec(ctx, fmt.Sprintf(`
				CREATE FUNCTION spec_refuse_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'spec: this payload cannot be rewritten' USING ERRCODE = 'check_violation'; END $$;
				CREATE TRIGGER spec_refuse_rewrite BEFORE UPDATE OF payload ON provider_event
				FOR EACH ROW WHEN (OLD.id = %d) EXECUTE FUNCTION spec_refuse_rewrite();`, stuck))
			Expect(err).NotTo(HaveOccurred())
			dropTrigger := func(ctx context.Context) {
				_, err := pool.Exec(ctx, `DROP TRIGGER IF EXISTS spec_refuse_rewrite ON provider_event; DROP FUNCTION IF EXISTS spec_refuse_rewrite()`)
				Expect(err).NotTo(HaveOccurred())
			}
			DeferCleanup(dropTrigger)

			id := start(octocat)
			var receipts []any
			Eventually(func() []any {
				receipts = progress(id)["receipts"].([]any)
				return receipts
			}).WithTimeout(settle).WithPolling(20*time.Millisecond).Should(HaveLen(4), "the pass completes over every store")
			Expect(receipts).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0),
				map[string]any{"store": "workspace-inbox", "pass": float64(1), "deleted": float64(3), "at": MatchRegexp(`Z$`),
					"failedRows": Equal([]any{float64(stuck)})},
				receipt("installation-inbox", 1, 1)))
			Expect(progress(id)["state"]).To(Equal("RUNNING"), "not DONE while a row still names the person")

			Expect(existing(ctx, victims, installation)).To(BeEmpty(), "the person's own deliveries are deleted")
			body := func(id int64) string {
				return support.Scalar[string](ctx, pool, `SELECT payload->'comment'->>'body' FROM provider_event WHERE id = $1`, id)
			}
			Expect([]string{body(before), body(stuck), body(after)}).To(Equal([]string{"thanks @ghost", "thanks @octocat", "thanks @ghost"}))
			Expect(fenceRaised(ctx)).To(BeFalse())
			Expect(support.Scalar[int](ctx, pool, `SELECT retries FROM inbox_erasure WHERE id = $1`, id)).To(Equal(1))
			Expect(support.Scalar[bool](ctx, pool, `SELECT retry_at > clock_timestamp() + interval '20 seconds' FROM inbox_erasure WHERE id = $1`, id)).
				To(BeTrue(), "the added pass waits for its delay")

			By("a later pass retrying the row once it can be rewritten")
			dropTrigger(ctx)
			// Moving time: the retry is due now.
			_, err = pool.Exec(ctx, `UPDATE inbox_erasure SET retry_at = clock_timestamp() WHERE id = $1`, id)
			Expect(err).NotTo(HaveOccurred())
			runner.Notify()
			receipts = awaitDone(id)
			Expect(receipts).To(HaveLen(8))
			Expect(receipts[4:]).To(matchReceipts(receipt("github-mirror", 2, 0), receipt("change-feed", 2, 0),
				receipt("workspace-inbox", 2, 1), receipt("installation-inbox", 2, 0)))
			Expect(body(stuck)).To(Equal("thanks @ghost"))
		})
	})

	It("previews the current matches per store without deleting anything", func(ctx SpecContext) {
		ids := []int64{
			insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "1", Payload: octocatSender}),
			insertRow(ctx, pool, row{Workspace: globex.ID, Repo: "1", State: "DEAD", Payload: octocatNested}),
			insertRow(ctx, pool, row{Payload: octocatSender}),
			insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "2", Payload: hubotSender}),
		}
		r := call("POST", "/api/admin/erasures/preview", adminToken, octocat)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"stores": []any{
			map[string]any{"store": "github-mirror", "matches": 0.0},
			map[string]any{"store": "change-feed", "matches": 0.0},
			map[string]any{"store": "workspace-inbox", "matches": 2.0},
			map[string]any{"store": "installation-inbox", "matches": 1.0},
		}}))
		Expect(existing(ctx, ids...)).To(Equal(ids))
		var requests int
		Expect(pool.QueryRow(ctx, `SELECT count(*) FROM inbox_erasure`).Scan(&requests)).To(Succeed())
		Expect(requests).To(BeZero())
	})

	DescribeTable("matching the person in each provider's payload shape",
		func(ctx SpecContext, prov, namespace, id, login, payload string, matches bool) {
			registerSource(ctx, acme, prov, namespace)
			insertRow(ctx, pool, row{Workspace: acme.ID, Provider: prov, Namespace: namespace, Payload: payload})
			r := call("POST", "/api/admin/erasures/preview", adminToken, map[string]any{
				"provider": prov, "sourceServerUrl": namespace, "identities": []map[string]any{{"id": id, "login": login}},
			})
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			want := 0.0
			if matches {
				want = 1
			}
			Expect(storeMatches(r.JSON, "workspace-inbox")).To(Equal(want))
		},
		Entry("GitHub login anywhere", "GITHUB", githubNamespace, "", "octocat", `{"review":{"user":{"login":"octocat"}}}`, true),
		Entry("GitHub user-shaped object by numeric id", "GITHUB", githubNamespace, "583231", "", `{"assignee":{"id":583231,"login":"renamed"}}`, true),
		Entry("GitHub repository id equal to the person's id", "GITHUB", githubNamespace, "583231", "", repositoryOnly, false),
		Entry("GitHub login null is not an absent login", "GITHUB", githubNamespace, "583231", "", `{"sender":{"login":null}}`, false),
		Entry("GitLab username", "GITLAB", "https://gitlab.example.com", "", "ana", `{"user":{"id":9,"username":"ana","name":"Ana"}}`, true),
		Entry("GitLab numeric author_id", "GITLAB", "https://gitlab.example.com", "42", "", `{"object_attributes":{"author_id":42}}`, true),
		Entry("Slack user field", "SLACK", "https://slack.com", "U024BE7LH", "", `{"event":{"type":"message","user":"U024BE7LH"}}`, true),
		Entry("Slack another user", "SLACK", "https://slack.com", "U024BE7LH", "", `{"event":{"type":"message","user":"U99"}}`, false),
		Entry("Outline actorId", "OUTLINE", "https://outline.example.com", "5e3c-aa", "", `{"actorId":"5e3c-aa","payload":{"id":"doc-1"}}`, true),
		Entry("a trailing slash of the namespace is the same namespace", "GITHUB", githubNamespace+"/", "", "octocat", octocatSender, true),
	)

	It("matches a connection registered as https://GitHub.com:443/ with an erasure for https://github.com, and its rows in either spelling", func(ctx SpecContext) {
		// Created by the management use case with the GitHub module, as the API creates it.
		workspaces, err := managementstore.NewWorkspaces(pool)
		Expect(err).NotTo(HaveOccurred())
		conns, err := managementstore.NewConnections(pool, managementstore.Config{Kinds: github.Module{}.Kinds()})
		Expect(err).NotTo(HaveOccurred())
		withGitHub, err := management.New(management.Config{AdminToken: adminToken}, workspaces, workspaces, conns,
			support.SecretBox(), []contract.ProviderModule{github.Module{}})
		Expect(err).NotTo(HaveOccurred())
		m, err := withGitHub.Manage(ctx, support.InstanceAdmin, acme.Slug)
		Expect(err).NotTo(HaveOccurred())
		_, err = withGitHub.CreateConnection(ctx, m, management.ConnectionRequest{Kind: "GITHUB_APP",
			SourceServerURL: "https://GitHub.com:443/", Config: map[string]any{"installationId": 1001}})
		Expect(err).NotTo(HaveOccurred())
		var stored string
		Expect(pool.QueryRow(ctx, `SELECT source_server_url FROM connection`).Scan(&stored)).To(Succeed())
		Expect(stored).To(Equal("https://github.com"))
		// Admission copies the connection's URL into the row; a row admitted before migration
		// 00045 still carries the typed spelling.
		admitted := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "1", Namespace: stored, Payload: octocatSender})
		older := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "2", Namespace: "https://GitHub.com:443/", Payload: octocatSender})
		otherHost := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "3", Namespace: "https://GitHub.com.evil:443/", Payload: octocatSender})

		id := start(map[string]any{"provider": "GITHUB", "sourceServerUrl": "https://github.com",
			"identities": []map[string]any{{"id": "583231", "login": "octocat"}}})
		Expect(awaitDone(id)).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 2), receipt("installation-inbox", 1, 0)))
		Expect(existing(ctx, admitted, older, otherHost)).To(Equal([]int64{otherHost}))
		Expect(support.Scalar[string](ctx, pool, `SELECT source_server_url FROM inbox_erasure`)).To(Equal("https://github.com"))
	})

	It("answers 400 for an erasure whose sourceServerUrl is not an absolute http(s) URL or has userinfo, a query or a fragment", func(ctx SpecContext) {
		registerSource(ctx, acme, "GITHUB", githubNamespace)
		for _, u := range []string{"github.com", "ftp://github.com", "https://octo:pw@github.com", "https://github.com?x", "https://github.com#f"} {
			r := call("POST", "/api/admin/erasures", adminToken, map[string]any{"provider": "GITHUB", "sourceServerUrl": u,
				"identities": []map[string]any{{"login": "octocat"}}})
			Expect(r.Status).To(Equal(http.StatusBadRequest), u)
			Expect(r.Raw).NotTo(ContainSubstring("pw"))
		}
		Expect(call("POST", "/api/admin/erasures/preview", adminToken, map[string]any{"provider": "GITHUB", "sourceServerUrl": "HTTPS://GITHUB.COM:443",
			"identities": []map[string]any{{"login": "octocat"}}}).Status).To(Equal(http.StatusOK), "the same namespace in another spelling")
	})

	It("freezes the person's id↔login pairs at start, so a pass after a rename erases the renamed events too", func(ctx SpecContext) {
		insertRow(ctx, pool, row{Workspace: acme.ID, Payload: octocatSender})
		byLogin := map[string]any{"provider": "GITHUB", "sourceServerUrl": githubNamespace,
			"identities": []map[string]any{{"login": "octocat"}}}
		id := start(byLogin)
		Expect(awaitDone(id)).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 1), receipt("installation-inbox", 1, 0)))

		renamed := insertRow(ctx, pool, row{Workspace: acme.ID, Payload: `{"action":"opened","sender":{"login":"octo-renamed","id":583231}}`})
		r := call("POST", fmt.Sprintf("/api/admin/erasures/%d/resume", id), adminToken, nil)
		Expect(r.Status).To(Equal(http.StatusAccepted), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("state", "RUNNING"))
		Expect(awaitDone(id)).To(matchReceipts(
			receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 1), receipt("installation-inbox", 1, 0),
			receipt("github-mirror", 2, 0), receipt("change-feed", 2, 0), receipt("workspace-inbox", 2, 1), receipt("installation-inbox", 2, 0)))
		Expect(existing(ctx, renamed)).To(BeEmpty())
	})

	It("erases a redelivery under a frozen key even when its payload no longer names the person", func(ctx SpecContext) {
		insertRow(ctx, pool, row{Workspace: acme.ID, DeliveryKey: "gh-1", Payload: octocatSender})
		id := start(octocat)
		awaitDone(id)
		redelivered := insertRow(ctx, pool, row{Workspace: acme.ID, DeliveryKey: "gh-1", Payload: `{"action":"opened"}`})
		elsewhere := insertRow(ctx, pool, row{Workspace: globex.ID, DeliveryKey: "gh-1", Payload: `{"action":"opened"}`})

		Expect(call("POST", fmt.Sprintf("/api/admin/erasures/%d/resume", id), adminToken, nil).Status).To(Equal(http.StatusAccepted))
		awaitDone(id)
		Expect(existing(ctx, redelivered, elsewhere)).To(Equal([]int64{elsewhere}), "the key names its workspace too")
	})

	It("leaves a delivery whose admission commits during the pass to the next pass, without waiting for it", func(ctx SpecContext) {
		before := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "1", Payload: octocatSender})

		// Admission stays available: its transaction stores a matching row and commits only
		// after the pass finished, without the pass waiting for it.
		admission, err := other.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { _ = admission.Rollback(ctx) })
		during := insertRow(ctx, admission, row{Workspace: acme.ID, Repo: "2", Payload: octocatSender})

		id := start(octocat)
		Expect(awaitDone(id)).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 1), receipt("installation-inbox", 1, 0)))
		Expect(admission.Commit(ctx)).To(Succeed())

		Expect(existing(ctx, before, during)).To(Equal([]int64{during}))
		Expect(during).To(BeNumerically(">", boundary(ctx, id, "workspace-inbox", 1)),
			"the documented rule: a row the pass left was stored after its boundary")

		Expect(call("POST", fmt.Sprintf("/api/admin/erasures/%d/resume", id), adminToken, nil).Status).To(Equal(http.StatusAccepted))
		awaitDone(id)
		Expect(existing(ctx, during)).To(BeEmpty(), "the next pass erases it")
	})

	// The pass reads its boundary before it raises the fence and waits for the fenced writes
	// that began earlier; a delivery whose admission commits while it waits is visible to its
	// DELETE, and only the boundary leaves it to the next pass. The spec holds the copy fence as
	// such a write does when the workspace-inbox store's pass begins, and commits an admission
	// while that pass is seen waiting for it.
	It("deletes no row above its boundary, even one that committed before its deletion ran", func(ctx SpecContext) {
		pauseRunner()
		before := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "1", Payload: octocatSender})
		scope, err := erasure.NewScope(githubProvider, githubNamespace, []erasure.Identity{octocatIdentity()})
		Expect(err).NotTo(HaveOccurred())
		req, err := erasures.Start(ctx, scope, 0)
		Expect(err).NotTo(HaveOccurred())

		var during int64
		held, err := erasures.Hold(ctx, func(ctx context.Context, r erasure.Request, receipts []erasure.Receipt) (erasure.Request, error) {
			for {
				store, pass, ok := r.Next(erasures.Mirrors(r.Scope().Provider()), receipts)
				if !ok {
					return r.Settle(receipts), nil
				}
				if store != erasure.WorkspaceInbox {
					rc, err := erasures.Pass(ctx, r.ID(), store, pass)
					Expect(err).NotTo(HaveOccurred())
					receipts = append(receipts, rc)
					continue
				}
				step, err := other.Begin(ctx)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func(ctx context.Context) { _ = step.Rollback(ctx) })
				_, err = step.Exec(ctx, `SELECT name FROM inbox_erasure_fence WHERE name = 'inbox' FOR KEY SHARE`)
				Expect(err).NotTo(HaveOccurred())

				type result struct {
					rc  erasure.Receipt
					err error
				}
				done := make(chan result, 1)
				go func() {
					defer GinkgoRecover()
					rc, err := erasures.Pass(ctx, r.ID(), store, pass)
					done <- result{rc, err}
				}()
				support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, step), 1) // boundary read, fence raised
				during = insertRow(ctx, other, row{Workspace: acme.ID, Repo: "2", Payload: octocatSender})
				Expect(step.Rollback(ctx)).To(Succeed())

				var res result
				Eventually(done).WithTimeout(settle).Should(Receive(&res))
				Expect(res.err).NotTo(HaveOccurred())
				Expect(during).To(BeNumerically(">", res.rc.Boundary))
				Expect(res.rc.Deleted).To(Equal(int64(1)), "only the row stored before the pass")
				receipts = append(receipts, res.rc)
			}
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(held).To(BeTrue())
		Expect(existing(ctx, before, during)).To(Equal([]int64{during}), "the row above the boundary is left to the next pass")

		_, err = erasures.Resume(ctx, req.ID())
		Expect(err).NotTo(HaveOccurred())
		Expect(support.EraseRunning(ctx, erasures, req.ID())).NotTo(BeEmpty())
		Expect(existing(ctx, during)).To(BeEmpty(), "the next pass erases it")
	})

	When("a fenced write began before the pass", func() {
		It("waits for it, while every later fenced write is refused without waiting", func(ctx SpecContext) {
			leased := insertRow(ctx, pool, row{Workspace: acme.ID, State: "LEASED", Epoch: 4, Payload: octocatSender})
			bystander := insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "2", State: "LEASED", Payload: hubotSender})

			step, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) { _ = step.Rollback(ctx) })
			Expect(fenced(ctx, step)).To(BeTrue(), "no erasure yet: the step takes the fence")

			id := start(octocat)
			Eventually(fenceRaised).WithContext(ctx).WithTimeout(settle).Should(BeTrue())
			// Admission keeps running while the pass waits at its first store (the mirror); this
			// delivery is stored before the pass's inbox step, so that step erases it: its
			// handler cannot write the person into the mirror after the mirror was erased.
			admitted := insertRow(ctx, other, row{Workspace: acme.ID, Repo: "3", Payload: octocatSender})

			late, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			began := time.Now()
			Expect(fenced(ctx, late)).To(BeFalse(), "a write that starts after the flag rolls back")
			Expect(time.Since(began)).To(BeNumerically("<", quick))
			Expect(late.Rollback(ctx)).To(Succeed())

			// The step runner's own write on a row of someone else is refused as contention.
			err = box.Write(dispatch.BindDispatch(ctx, ports.Claimed{Delivery: inbox.RestoreDelivery(inbox.Stored{
				ID: bystander, State: inbox.Leased, LeaseEpoch: 1, LeasedUntil: time.Now().Add(time.Minute)})}),
				func(context.Context, ports.Tx) error { return nil })
			Expect(err).To(MatchError(inbox.ErrBusy))

			// The pass waits for the step's lock, as pg_stat_activity shows.
			support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, step), 1)
			Expect(progress(id)["state"]).To(Equal("RUNNING"))
			Expect(existing(ctx, leased)).To(Equal([]int64{leased}), "the pass waits for the step that began first")

			Expect(step.Commit(ctx)).To(Succeed())
			awaitDone(id)
			Expect(existing(ctx, leased, admitted)).To(BeEmpty())
			Expect(admitted).To(BeNumerically("<=", boundary(ctx, id, "workspace-inbox", 1)),
				"stored during the mirror step, before the inbox step's boundary")
			Expect(fenceRaised(ctx)).To(BeFalse())

			after, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) { _ = after.Rollback(ctx) })
			Expect(fenced(ctx, after)).To(BeTrue(), "the lowered fence admits writes again")
		})
	})

	It("finishes a request whose server died mid-pass and lowers the fence it left raised", func(ctx SpecContext) {
		mine := insertRow(ctx, pool, row{Workspace: acme.ID, Payload: octocatSender})
		// What a server leaves when it dies between raising the fence and its deletion: a
		// RUNNING request nobody holds, and the fence raised in its name.
		tx, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		var id int64
		Expect(tx.QueryRow(ctx, `INSERT INTO inbox_erasure (provider, source_server_url, identities, requested_by)
			VALUES ('GITHUB', $1, '[{"id":"583231","login":"octocat"}]', 0) RETURNING id`, githubNamespace).Scan(&id)).To(Succeed())
		_, err = tx.Exec(ctx, `UPDATE inbox_erasure_fence SET in_progress = true, erasure_id = $1`, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(tx.Commit(ctx)).To(Succeed())

		runner.Notify() // what the 30 s tick does on every server
		Expect(awaitDone(id)).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 1), receipt("installation-inbox", 1, 0)))
		Expect(existing(ctx, mine)).To(BeEmpty())
		Expect(fenceRaised(ctx)).To(BeFalse())
	})

	It("lowers a fence left raised for a request that is no longer running", func(ctx SpecContext) {
		var id int64
		Expect(pool.QueryRow(ctx, `INSERT INTO inbox_erasure (provider, source_server_url, identities, requested_by, state)
			VALUES ('GITHUB', $1, '[{"login":"octocat"}]', 0, 'FAILED') RETURNING id`, githubNamespace).Scan(&id)).To(Succeed())
		_, err := pool.Exec(ctx, `UPDATE inbox_erasure_fence SET in_progress = true, erasure_id = $1`, id)
		Expect(err).NotTo(HaveOccurred())

		runner.Notify()
		Eventually(fenceRaised).WithContext(ctx).WithTimeout(settle).Should(BeFalse())
		Expect(progress(id)["state"]).To(Equal("FAILED"), "nothing resumes a failed request but an operator")
	})

	It("keeps the copy fence raised while another request is between its mirror and inbox stores", func(ctx SpecContext) {
		insertRow(ctx, pool, row{Workspace: acme.ID, Payload: octocatSender})
		first, err := erasures.Start(ctx, mustScope(), 0)
		Expect(err).NotTo(HaveOccurred())
		hubot, err := erasure.NewIdentity("1", "hubot", "")
		Expect(err).NotTo(HaveOccurred())
		hubotScope, err := erasure.NewScope(githubProvider, githubNamespace, []erasure.Identity{hubot})
		Expect(err).NotTo(HaveOccurred())
		second, err := erasures.Start(ctx, hubotScope, 0)
		Expect(err).NotTo(HaveOccurred())

		errBetweenStores := errors.New("stopping between the stores")
		held, err := erasures.Hold(ctx, func(ctx context.Context, r erasure.Request, _ []erasure.Receipt) (erasure.Request, error) {
			Expect(r.ID()).To(Equal(first.ID()))
			_, err := erasures.Pass(ctx, r.ID(), erasure.MirrorStore(githubProvider), 1)
			Expect(err).NotTo(HaveOccurred())
			// Another server works the second request through a whole pass meanwhile.
			for _, st := range erasure.Plan(erasures.Mirrors(githubProvider)) {
				_, err := erasures.Pass(ctx, second.ID(), st, 1)
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(fenceRaised(ctx)).To(BeTrue(), "the first request is still within its pass")
			return erasure.Request{}, errBetweenStores
		})
		Expect(held).To(BeTrue())
		Expect(err).To(MatchError(errBetweenStores))

		runner.Notify()
		awaitDone(first.ID())
		awaitDone(second.ID())
		Expect(fenceRaised(ctx)).To(BeFalse(), "lowered when no request is within a pass")
	})

	It("is worked by one server at a time", func(ctx SpecContext) {
		insertRow(ctx, pool, row{Workspace: acme.ID, Payload: octocatSender})
		second, err := personerasure.NewRunner(personerasure.RunnerConfig{}, erasures, support.Logger{})
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = second.Run(runCtx)
		}()
		DeferCleanup(func() { cancel(); <-done })

		req, err := erasures.Start(ctx, mustScope(), 0)
		Expect(err).NotTo(HaveOccurred())
		second.Notify()
		runner.Notify()
		Expect(awaitDone(req.ID())).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 1), receipt("installation-inbox", 1, 0)))
	})

	Describe("its API", func() {
		It("is the instance administrator's alone", func(ctx SpecContext) {
			ana := newAccount(ctx, "ana", false, acme, "ADMIN")
			ops := newAccount(ctx, "ops", true, acme, "")
			for _, p := range []string{"/api/admin/erasures/preview", "/api/admin/erasures"} {
				Expect(call("POST", p, "", octocat).Status).To(Equal(http.StatusUnauthorized))
				Expect(call("POST", p, ana.Token, octocat).Status).To(Equal(http.StatusForbidden))
			}
			Expect(call("POST", "/api/admin/erasures/preview", ops.Token, octocat).Status).To(Equal(http.StatusOK))
			id := start(octocat)
			Expect(call("GET", fmt.Sprintf("/api/admin/erasures/%d", id), ana.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(call("POST", fmt.Sprintf("/api/admin/erasures/%d/resume", id), ana.Token, nil).Status).To(Equal(http.StatusForbidden))
			awaitDone(id)
			Expect(call("GET", "/api/admin/erasures/999999", adminToken, nil).Status).To(Equal(http.StatusNotFound))
		})

		It("refuses a request that names no namespace or no identity", func() {
			for _, body := range []map[string]any{
				{"provider": "GITHUB", "sourceServerUrl": "github.com", "identities": []map[string]any{{"login": "octocat"}}},
				{"provider": "GITHUB", "sourceServerUrl": githubNamespace, "identities": []map[string]any{}},
				{"provider": "GITHUB", "sourceServerUrl": githubNamespace, "identities": []map[string]any{{"id": ""}}},
				{"provider": "github", "sourceServerUrl": githubNamespace, "identities": []map[string]any{{"login": "octocat"}}},
			} {
				r := call("POST", "/api/admin/erasures", adminToken, body)
				Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
				Expect(r.JSON).To(Equal(map[string]any{"error": "invalid-erasure"}))
			}
		})

		It("refuses a source namespace this instance does not have with 422 unknown-source, and starts nothing", func(ctx SpecContext) {
			registerSource(ctx, acme, "GITLAB", "https://gitlab.example.com")
			insertRow(ctx, pool, row{Workspace: acme.ID, Provider: "GITLAB", Namespace: "https://gitlab.example.com",
				Payload: `{"user":{"id":9,"username":"ana"}}`})
			for _, body := range []map[string]any{
				{"provider": "GITHUB", "sourceServerUrl": "https://githb.com", "identities": []map[string]any{{"login": "octocat"}}},
				{"provider": "GITLAB", "sourceServerUrl": "https://gitlab.exmaple.com", "identities": []map[string]any{{"login": "ana"}}},
				{"provider": "SLACK", "sourceServerUrl": "https://gitlab.example.com", "identities": []map[string]any{{"id": "U1"}}},
			} {
				for _, path := range []string{"/api/admin/erasures/preview", "/api/admin/erasures"} {
					r := call("POST", path, adminToken, body)
					Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), path+" "+r.Raw)
					Expect(r.JSON).To(Equal(map[string]any{"error": "unknown-source"}))
				}
			}
			var requests int
			Expect(pool.QueryRow(ctx, `SELECT count(*) FROM inbox_erasure`).Scan(&requests)).To(Succeed())
			Expect(requests).To(BeZero())

			r := call("POST", "/api/admin/erasures/preview", adminToken, map[string]any{"provider": "GITLAB",
				"sourceServerUrl": "https://gitlab.example.com/", "identities": []map[string]any{{"login": "ana"}}})
			Expect(r.Status).To(Equal(http.StatusOK), "the registered source, trailing slash aside: "+r.Raw)
			Expect(storeMatches(r.JSON, "workspace-inbox")).To(Equal(1.0))
		})

		It("matches GitHub and GitLab logins and e-mail addresses whatever their case", func(ctx SpecContext) {
			registerSource(ctx, acme, "GITLAB", "https://gitlab.example.com")
			insertRow(ctx, pool, row{Workspace: acme.ID, Payload: `{"action":"opened","sender":{"login":"OctoCat","id":583231}}`})
			insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "2", Payload: `{"ref":"refs/heads/main","commits":[{"author":{"name":"Mona","email":"Mona@Example.COM"}}]}`})
			insertRow(ctx, pool, row{Workspace: acme.ID, Provider: "GITLAB", Namespace: "https://gitlab.example.com",
				Payload: `{"object_kind":"push","user_username":"Ana.Dev","user_email":"ANA@example.com"}`})
			preview := func(prov, ns string, identity map[string]any) any {
				GinkgoHelper()
				r := call("POST", "/api/admin/erasures/preview", adminToken, map[string]any{
					"provider": prov, "sourceServerUrl": ns, "identities": []map[string]any{identity}})
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				return storeMatches(r.JSON, "workspace-inbox")
			}
			Expect(preview("GITHUB", githubNamespace, map[string]any{"login": "octocat"})).To(Equal(1.0))
			Expect(preview("GITHUB", githubNamespace, map[string]any{"email": "mona@example.com"})).To(Equal(1.0))
			Expect(preview("GITLAB", "https://gitlab.example.com", map[string]any{"login": "ana.dev"})).To(Equal(1.0))
			Expect(preview("GITLAB", "https://gitlab.example.com", map[string]any{"email": "ana@EXAMPLE.com"})).To(Equal(1.0))
			Expect(preview("GITHUB", githubNamespace, map[string]any{"login": "octocats"})).To(Equal(0.0))

			id := start(map[string]any{"provider": "GITHUB", "sourceServerUrl": githubNamespace,
				"identities": []map[string]any{{"login": "OCTOCAT"}}})
			Expect(awaitDone(id)).To(matchReceipts(receipt("github-mirror", 1, 0), receipt("change-feed", 1, 0), receipt("workspace-inbox", 1, 1), receipt("installation-inbox", 1, 0)))
		})

		It("accepts a numeric identity id as its digits", func(ctx SpecContext) {
			insertRow(ctx, pool, row{Workspace: acme.ID, Payload: octocatSender})
			r := call("POST", "/api/admin/erasures/preview", adminToken, map[string]any{
				"provider": "GITHUB", "sourceServerUrl": githubNamespace, "identities": []map[string]any{{"id": 583231}}})
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(storeMatches(r.JSON, "workspace-inbox")).To(Equal(1.0))
		})
	})
})

func mustScope() erasure.Scope {
	GinkgoHelper()
	id, err := erasure.NewIdentity("583231", "octocat", "")
	Expect(err).NotTo(HaveOccurred())
	s, err := erasure.NewScope(githubProvider, githubNamespace, []erasure.Identity{id})
	Expect(err).NotTo(HaveOccurred())
	return s
}

// storeMatches is one store's count in a preview answer.
func storeMatches(answer map[string]any, store string) any {
	GinkgoHelper()
	for _, s := range answer["stores"].([]any) {
		if m := s.(map[string]any); m["store"] == store {
			return m["matches"]
		}
	}
	Fail("no store " + store + " in the preview")
	return nil
}

// registerSource gives ws a connection of prov registered with namespace, which makes the
// namespace one this instance has.
func registerSource(ctx context.Context, ws workspaceFixture, prov, namespace string) {
	GinkgoHelper()
	// Stored canonical, as connection creation (and migration 00045) stores every connection's URL.
	canonical, err := provider.CanonicalServerURL(namespace)
	Expect(err).NotTo(HaveOccurred())
	_, err = pool.Exec(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url) VALUES ($1, $2, $2, $3)`,
		ws.ID, prov, canonical)
	Expect(err).NotTo(HaveOccurred())
}

// octocatIdentity is the person of the octocat payloads.
func octocatIdentity() erasure.Identity {
	GinkgoHelper()
	id, err := erasure.NewIdentity("583231", "octocat", "")
	Expect(err).NotTo(HaveOccurred())
	return id
}

// pauseRunner stops the suite's erasure runner until the spec ends, so the spec works its
// request itself, pass by pass, and no runner can take it first.
func pauseRunner() {
	stopRunner()
	<-runnerDone
	DeferCleanup(func() {
		var runCtx context.Context
		runCtx, stopRunner = context.WithCancel(context.Background())
		runnerDone = make(chan struct{})
		go func() {
			defer close(runnerDone)
			_ = runner.Run(runCtx)
		}()
	})
}
