package operators_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Dead letters of a workspace", func() {
	var (
		acme, globex                       workspaceFixture
		acmeAdmin, acmeMember, globexAdmin accountFixture
		operator                           accountFixture // an account with instanceAdmin
	)

	BeforeEach(func(ctx SpecContext) {
		acme, globex = newWorkspace(ctx, "acme"), newWorkspace(ctx, "globex")
		acmeAdmin = newAccount(ctx, "ana", false, acme, "ADMIN")
		acmeMember = newAccount(ctx, "bob", false, acme, "MEMBER")
		globexAdmin = newAccount(ctx, "gil", false, globex, "ADMIN")
		operator = newAccount(ctx, "ops", true, acme, "")
	})

	deadLetters := func(ws workspaceFixture) string {
		return "/api/workspaces/" + ws.Slug + "/integration/dead-letters"
	}

	Describe("the list", func() {
		It("pages the DEAD rows newest first by end time, then id, with their list fields", func(ctx SpecContext) {
			var ids []int64
			for i := range 5 {
				ids = append(ids, insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Repo: fmt.Sprint(i),
					EndedAgo: time.Duration(5-i) * time.Minute}))
			}
			// Two rows ended at the same moment are ordered by id, newest first.
			tie := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", EndedAgo: 5 * time.Minute})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET ended_at = (SELECT ended_at FROM provider_event WHERE id = $1) WHERE id = $2`, ids[0], tie)
			Expect(err).NotTo(HaveOccurred())
			insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE"})
			insertRow(ctx, pool, row{Workspace: acme.ID, State: "QUEUED", Repo: "9"})
			insertRow(ctx, pool, row{Workspace: globex.ID, State: "DEAD"})
			insertRow(ctx, pool, row{State: "DEAD"}) // installation

			var got []int64
			for page := range 4 {
				r := call("GET", fmt.Sprintf("%s?page=%d&size=2", deadLetters(acme), page), acmeAdmin.Token, nil)
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				Expect(r.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 6)))
				Expect(r.JSON).To(HaveKeyWithValue("page", BeNumerically("==", page)))
				Expect(r.JSON).To(HaveKeyWithValue("size", BeNumerically("==", 2)))
				items := r.JSON["items"].([]any)
				if page == 3 {
					Expect(items).To(BeEmpty())
				} else {
					Expect(items).To(HaveLen(2))
				}
				for _, it := range items {
					got = append(got, int64(it.(map[string]any)["id"].(float64)))
				}
			}
			Expect(got).To(Equal([]int64{ids[4], ids[3], ids[2], ids[1], tie, ids[0]}))

			first := call("GET", deadLetters(acme)+"?size=1", acmeAdmin.Token, nil).JSON["items"].([]any)[0].(map[string]any)
			Expect(first).To(HaveLen(10))
			Expect(first).To(SatisfyAll(
				HaveKeyWithValue("id", BeNumerically("==", ids[4])),
				HaveKeyWithValue("provider", "GITHUB"),
				HaveKeyWithValue("eventType", "issues"),
				HaveKeyWithValue("deliveryKey", Not(BeEmpty())),
				HaveKeyWithValue("scopeKey", fmt.Sprintf("ws:%d:github:repository:4", acme.ID)),
				HaveKeyWithValue("subject", "github:repository:4"),
				HaveKeyWithValue("receivedAt", MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)),
				HaveKeyWithValue("deadAt", MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)),
				HaveKeyWithValue("attempts", BeNumerically("==", 3)),
				HaveKeyWithValue("errorClass", "PERMANENT:*json.SyntaxError"),
			))
		})

		It("refuses a page size over 200", func() {
			r := call("GET", deadLetters(acme)+"?size=201", acmeAdmin.Token, nil)
			Expect(r.Status).To(Equal(http.StatusBadRequest))
		})
	})

	Describe("permissions", func() {
		It("lets only the workspace's ADMIN and the instance administrator in", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})
			paths := []struct{ method, path string }{
				{"GET", deadLetters(acme)},
				{"GET", fmt.Sprintf("%s/%d", deadLetters(acme), id)},
				{"GET", "/api/workspaces/acme/integration/inbox"},
				{"POST", fmt.Sprintf("%s/%d/replay", deadLetters(acme), id)},
			}
			for _, p := range paths {
				Expect(call(p.method, p.path, "", nil).Status).To(Equal(http.StatusUnauthorized), p.path)
				Expect(call(p.method, p.path, "hx_not-a-token", nil).Status).To(Equal(http.StatusUnauthorized), p.path)
				Expect(call(p.method, p.path, acmeMember.Token, nil).Status).To(Equal(http.StatusForbidden), p.path)
				Expect(call(p.method, p.path, globexAdmin.Token, nil).Status).To(Equal(http.StatusForbidden), p.path)
			}
			Expect(readRow(ctx, id).State).To(Equal("DEAD"), "no refused caller replayed it")
			for _, token := range []string{acmeAdmin.Token, operator.Token, adminToken} {
				for _, p := range paths[:3] {
					Expect(call(p.method, p.path, token, nil).Status).To(Equal(http.StatusOK), p.path)
				}
			}
		})

		It("keeps the installation's dead letters to the instance administrator", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{State: "DEAD"})
			for _, path := range []string{"/api/admin/integration/dead-letters", fmt.Sprintf("/api/admin/integration/dead-letters/%d", id)} {
				Expect(call("GET", path, "", nil).Status).To(Equal(http.StatusUnauthorized))
				Expect(call("GET", path, acmeAdmin.Token, nil).Status).To(Equal(http.StatusForbidden))
				Expect(call("GET", path, operator.Token, nil).Status).To(Equal(http.StatusOK))
				Expect(call("GET", path, adminToken, nil).Status).To(Equal(http.StatusOK))
			}
			Expect(call("POST", fmt.Sprintf("/api/admin/integration/dead-letters/%d/replay", id), acmeAdmin.Token, nil).Status).
				To(Equal(http.StatusForbidden))
			Expect(readRow(ctx, id).State).To(Equal("DEAD"))
		})
	})

	Describe("workspace isolation", func() {
		It("answers 404 for a row of another workspace or of the installation, and never replays it", func(ctx SpecContext) {
			theirs := insertRow(ctx, pool, row{Workspace: globex.ID, State: "DEAD"})
			installation := insertRow(ctx, pool, row{State: "DEAD"})
			for _, id := range []int64{theirs, installation} {
				r := call("GET", fmt.Sprintf("%s/%d", deadLetters(acme), id), acmeAdmin.Token, nil)
				Expect(r.Status).To(Equal(http.StatusNotFound))
				Expect(r.JSON).To(Equal(map[string]any{"error": "not-found"}))
				Expect(call("POST", fmt.Sprintf("%s/%d/replay", deadLetters(acme), id), acmeAdmin.Token, nil).Status).
					To(Equal(http.StatusNotFound))
				Expect(readRow(ctx, id).State).To(Equal("DEAD"))
			}
			mine := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})
			Expect(call("GET", fmt.Sprintf("/api/admin/integration/dead-letters/%d", mine), adminToken, nil).Status).
				To(Equal(http.StatusNotFound), "a workspace row is no installation row")
		})
	})

	Describe("one dead letter", func() {
		It("adds the payload and the headers", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Payload: `{"action":"edited","issue":{"number":7}}`})
			r := call("GET", fmt.Sprintf("%s/%d", deadLetters(acme), id), acmeAdmin.Token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("payload", map[string]any{"action": "edited", "issue": map[string]any{"number": 7.0}}))
			Expect(r.JSON).To(HaveKeyWithValue("headers", HaveKeyWithValue("Hephaestus-Source-Server-Url", githubNamespace)))
			Expect(r.JSON).To(HaveKeyWithValue("errorClass", "PERMANENT:*json.SyntaxError"))
		})

		It("is 404 when the row is not DEAD", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE"})
			Expect(call("GET", fmt.Sprintf("%s/%d", deadLetters(acme), id), acmeAdmin.Token, nil).Status).To(Equal(http.StatusNotFound))
		})
	})

	Describe("replay", func() {
		It("sets the row back to QUEUED with attempt 0, records the account and time, and refuses a second replay", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})
			before := wakes.count()
			r := call("POST", fmt.Sprintf("%s/%d/replay", deadLetters(acme), id), acmeAdmin.Token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON).To(SatisfyAll(
				HaveKeyWithValue("id", BeNumerically("==", id)),
				HaveKeyWithValue("state", "QUEUED"),
				HaveKeyWithValue("replayedBy", BeNumerically("==", acmeAdmin.ID)),
				HaveKeyWithValue("replayedAt", MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)),
			))
			stored := readRow(ctx, id)
			Expect(stored.State).To(Equal("QUEUED"))
			Expect(stored.Attempt).To(BeZero())
			Expect(stored.ReplayedBy).To(HaveValue(Equal(acmeAdmin.ID)))
			Expect(wakes.count()).To(BeNumerically(">", before), "this server's claimers are woken")

			again := call("POST", fmt.Sprintf("%s/%d/replay", deadLetters(acme), id), acmeAdmin.Token, nil)
			Expect(again.Status).To(Equal(http.StatusConflict))
			Expect(again.JSON).To(Equal(map[string]any{"error": "not-dead"}))
		})

		It("answers one of two concurrent replays with 200 and the other with 409", func(ctx SpecContext) {
			for i := range 3 {
				id := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Repo: fmt.Sprint(i)})
				var (
					wg       sync.WaitGroup
					start    = make(chan struct{})
					statuses = make([]int, 2)
				)
				for j := range statuses {
					wg.Add(1)
					go func() {
						defer GinkgoRecover()
						defer wg.Done()
						<-start
						statuses[j] = call("POST", fmt.Sprintf("%s/%d/replay", deadLetters(acme), id), acmeAdmin.Token, nil).Status
					}()
				}
				close(start)
				wg.Wait()
				sort.Ints(statuses)
				Expect(statuses).To(Equal([]int{http.StatusOK, http.StatusConflict}))
			}
		})

		It("resumes the row at the head of its scope with its committed steps", func(ctx SpecContext) {
			dead := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Repo: "42"})
			addStep(ctx, dead, "issue-write")
			later := insertRow(ctx, pool, row{Workspace: acme.ID, State: "QUEUED", Repo: "42"})

			Expect(call("POST", fmt.Sprintf("%s/%d/replay", deadLetters(acme), dead), acmeAdmin.Token, nil).Status).
				To(Equal(http.StatusOK))

			claimed, err := inboxStore.Claim(ctx, "spec", 10, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			var got []int64
			for _, c := range claimed {
				got = append(got, c.Delivery.ID())
			}
			Expect(got).To(Equal([]int64{dead}), "the later row of the scope waits for the replayed one")
			Expect(readRow(ctx, later).State).To(Equal("QUEUED"))
			Expect(stepCount(ctx, dead)).To(Equal(1), "its committed step stays, so handling resumes")
		})
	})

	Describe("installation replay", func() {
		// auditRows names each audit record's principal: "INSTANCE_ADMIN_TOKEN" (no account
		// id), or "ACCOUNT:<id>:<login>".
		auditRows := func(ctx context.Context, id int64) []string {
			GinkgoHelper()
			rows, err := pool.Query(ctx, `
				SELECT principal || coalesce(':' || account_id || ':' || account_login, '')
				FROM provider_event_replay_audit WHERE event_id = $1 ORDER BY id`, id)
			Expect(err).NotTo(HaveOccurred())
			var principals []string
			for rows.Next() {
				var a string
				Expect(rows.Scan(&a)).To(Succeed())
				principals = append(principals, a)
			}
			Expect(rows.Err()).NotTo(HaveOccurred())
			return principals
		}
		replayPath := func(id int64) string { return fmt.Sprintf("/api/admin/integration/dead-letters/%d/replay", id) }

		It("commits its audit record with the replay, recording the administrator token as its own principal, not as an account id", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{State: "DEAD"})
			r := call("POST", replayPath(id), adminToken, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("replayedBy", BeNil()))
			Expect(r.JSON).To(HaveKeyWithValue("replayedByPrincipal", "INSTANCE_ADMIN_TOKEN"))
			Expect(readRow(ctx, id).State).To(Equal("QUEUED"))
			Expect(readRow(ctx, id).ReplayedBy).To(BeNil(), "no account id is stored for the administrator token")
			Expect(auditRows(ctx, id)).To(Equal([]string{"INSTANCE_ADMIN_TOKEN"}))

			Expect(call("POST", replayPath(id), operator.Token, nil).Status).To(Equal(http.StatusConflict))
			Expect(auditRows(ctx, id)).To(Equal([]string{"INSTANCE_ADMIN_TOKEN"}), "a refused replay leaves no audit record")
		})

		It("records an instance administrator account by its id and login, which stay after the account is disabled", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{State: "DEAD"})
			r := call("POST", replayPath(id), operator.Token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("replayedBy", BeNumerically("==", operator.ID)))
			Expect(r.JSON).To(HaveKeyWithValue("replayedByPrincipal", "ACCOUNT"))
			want := []string{fmt.Sprintf("ACCOUNT:%d:ops", operator.ID)}
			Expect(auditRows(ctx, id)).To(Equal(want))

			Expect(call("DELETE", fmt.Sprintf("/api/admin/accounts/%d", operator.ID), adminToken, nil).Status).To(Equal(http.StatusNoContent))
			Expect(call("GET", "/api/admin/integration/dead-letters", operator.Token, nil).Status).To(Equal(http.StatusUnauthorized))
			Expect(auditRows(ctx, id)).To(Equal(want))
		})

		It("does not commit the replay when its audit record cannot be written", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{State: "DEAD"})
			_, err := pool.Exec(ctx, fmt.Sprintf(
				`ALTER TABLE provider_event_replay_audit ADD CONSTRAINT spec_refuse_audit CHECK (event_id <> %d)`, id))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_, err := pool.Exec(ctx, `ALTER TABLE provider_event_replay_audit DROP CONSTRAINT spec_refuse_audit`)
				Expect(err).NotTo(HaveOccurred())
			})

			Expect(call("POST", replayPath(id), operator.Token, nil).Status).To(Equal(http.StatusInternalServerError))
			Expect(readRow(ctx, id).State).To(Equal("DEAD"), "replay and audit commit together or not at all")
			Expect(auditRows(ctx, id)).To(BeEmpty())
		})
	})

	Describe("the inbox overview", func() {
		It("counts the workspace's rows by state, ages its oldest QUEUED row and lists its busiest scopes", func(ctx SpecContext) {
			for range 3 {
				insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "7"})
			}
			insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "8", ReceivedAgo: 2 * time.Minute})
			insertRow(ctx, pool, row{Workspace: acme.ID, Repo: "9", State: "LEASED"})
			insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE"})
			insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})
			insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})
			for range 5 {
				insertRow(ctx, pool, row{Workspace: globex.ID, Repo: "7", ReceivedAgo: time.Hour})
			}
			insertRow(ctx, pool, row{State: "QUEUED", ReceivedAgo: time.Hour})

			r := call("GET", "/api/workspaces/acme/integration/inbox", acmeAdmin.Token, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON["counts"]).To(Equal(map[string]any{"QUEUED": 4.0, "LEASED": 1.0, "DONE": 1.0, "DEAD": 2.0}))
			Expect(r.JSON["oldestQueuedAgeSeconds"]).To(BeNumerically("~", 120, 30))
			Expect(r.JSON["busiestScopes"]).To(Equal([]any{
				map[string]any{"scopeKey": fmt.Sprintf("ws:%d:github:repository:7", acme.ID), "queued": 3.0},
				map[string]any{"scopeKey": fmt.Sprintf("ws:%d:github:repository:8", acme.ID), "queued": 1.0},
			}))
		})

		It("lists at most ten scopes and answers zeros for an empty inbox", func(ctx SpecContext) {
			Expect(call("GET", "/api/workspaces/acme/integration/inbox", acmeAdmin.Token, nil).JSON).To(Equal(map[string]any{
				"counts":                 map[string]any{"QUEUED": 0.0, "LEASED": 0.0, "DONE": 0.0, "DEAD": 0.0},
				"oldestQueuedAgeSeconds": 0.0,
				"busiestScopes":          []any{},
				"estimatedCounts":        []any{},
			}))
			for i := range 12 {
				insertRow(ctx, pool, row{Workspace: acme.ID, Repo: fmt.Sprint(i)})
			}
			Expect(call("GET", "/api/workspaces/acme/integration/inbox", acmeAdmin.Token, nil).JSON["busiestScopes"]).To(HaveLen(10))
		})
	})
})
