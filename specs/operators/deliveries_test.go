package operators_test

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// itemIDs are the ids of a page's items, in order.
func itemIDs(r response) []int64 {
	GinkgoHelper()
	Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	var out []int64
	for _, it := range r.JSON["items"].([]any) {
		out = append(out, int64(it.(map[string]any)["id"].(float64)))
	}
	return out
}

var _ = Describe("The deliveries browser", func() {
	var (
		acme, globex          workspaceFixture
		acmeMember, acmeAdmin accountFixture
		globexMember          accountFixture
		operator              accountFixture // an account with instanceAdmin, no member of anything
	)

	BeforeEach(func(ctx SpecContext) {
		acme, globex = newWorkspace(ctx, "acme"), newWorkspace(ctx, "globex")
		acmeMember = newAccount(ctx, "bob", false, acme, "MEMBER")
		acmeAdmin = newAccount(ctx, "ana", false, acme, "ADMIN")
		globexMember = newAccount(ctx, "gil", false, globex, "MEMBER")
		operator = newAccount(ctx, "ops", true, acme, "")
	})

	deliveries := func(ws workspaceFixture) string { return "/api/workspaces/" + ws.Slug + "/integration/deliveries" }

	Describe("a workspace's list", func() {
		It("shows every row in any state to any member, newest first, and nothing of another workspace or the installation", func(ctx SpecContext) {
			done := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE", ReceivedAgo: 4 * time.Minute})
			dead := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Repo: "2", ReceivedAgo: 3 * time.Minute})
			leased := insertRow(ctx, pool, row{Workspace: acme.ID, State: "LEASED", Repo: "3", ReceivedAgo: 2 * time.Minute})
			queued := insertRow(ctx, pool, row{Workspace: acme.ID, State: "QUEUED", Repo: "4", ReceivedAgo: time.Minute})
			insertRow(ctx, pool, row{Workspace: globex.ID, State: "DONE"})
			insertRow(ctx, pool, row{State: "DONE"}) // installation

			for _, who := range []accountFixture{acmeMember, acmeAdmin, operator} {
				r := call("GET", deliveries(acme), who.Token, nil)
				Expect(itemIDs(r)).To(Equal([]int64{queued, leased, dead, done}))
				Expect(r.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 4)))
				Expect(r.JSON).To(HaveKeyWithValue("totalCapped", false))
			}
			r := call("GET", deliveries(acme), acmeMember.Token, nil)
			items := r.JSON["items"].([]any)
			Expect(items[0]).To(HaveKeyWithValue("state", "QUEUED"))
			Expect(items[0]).To(HaveKeyWithValue("lastAttemptAt", BeNil()), "never claimed")
			Expect(items[2]).To(HaveKeyWithValue("state", "DEAD"))
			Expect(items[2]).To(HaveKeyWithValue("deadAt", Not(BeNil())))
			Expect(items[2]).To(HaveKeyWithValue("errorClass", "PERMANENT:*json.SyntaxError"))
			Expect(items[3]).To(HaveKeyWithValue("state", "DONE"))
			Expect(items[3]).To(HaveKeyWithValue("deadAt", BeNil()), "a DONE row is no dead letter")

			By("pages")
			r = call("GET", deliveries(acme)+"?page=1&size=3", acmeMember.Token, nil)
			Expect(itemIDs(r)).To(Equal([]int64{done}))
			Expect(r.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 4)))
		})

		It("refuses a non-member (403), an unknown workspace (404) and no token (401)", func() {
			Expect(call("GET", deliveries(acme), globexMember.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(call("GET", "/api/workspaces/nowhere/integration/deliveries", acmeMember.Token, nil).Status).To(Equal(http.StatusNotFound))
			Expect(call("GET", deliveries(acme), "", nil).Status).To(Equal(http.StatusUnauthorized))
		})

		It("narrows by every filter field", func(ctx SpecContext) {
			a := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE", Repo: "1", ReceivedAgo: 50 * time.Minute})
			b := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD", Repo: "2", ReceivedAgo: 40 * time.Minute})
			c := insertRow(ctx, pool, row{Workspace: acme.ID, State: "QUEUED", Repo: "3", Provider: "GITLAB", ReceivedAgo: 30 * time.Minute})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET event_type = 'push' WHERE id = $1`, c)
			Expect(err).NotTo(HaveOccurred())
			insertRow(ctx, pool, row{Workspace: globex.ID, State: "DEAD", Repo: "2", DeliveryKey: "shared-key"})
			keyed := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE", Repo: "4", DeliveryKey: "shared-key", ReceivedAgo: 20 * time.Minute})

			detail := call("GET", fmt.Sprintf("%s/%d", deliveries(acme), b), acmeMember.Token, nil)
			Expect(detail.Status).To(Equal(http.StatusOK), detail.Raw)
			subject, scope := detail.JSON["subject"].(string), detail.JSON["scopeKey"].(string)

			at := func(ago time.Duration) string {
				return url.QueryEscape(time.Now().Add(-ago).UTC().Format(time.RFC3339))
			}
			for query, want := range map[string][]int64{
				"state=DEAD":      {b},
				"state=QUEUED":    {c},
				"provider=GITLAB": {c},
				"eventType=push":  {c},
				"errorClass=" + url.QueryEscape("PERMANENT:*json.SyntaxError"):                  {b},
				"subject=" + url.QueryEscape(subject):                                           {b},
				"scopeKey=" + url.QueryEscape(scope):                                            {b},
				"deliveryKey=shared-key":                                                        {keyed},
				"deliveryKey=shared-key&provider=GITHUB":                                        {keyed},
				"deliveryKey=shared-key&provider=GITLAB":                                        nil,
				"receivedAfter=" + at(45*time.Minute):                                           {keyed, c, b},
				"receivedBefore=" + at(35*time.Minute):                                          {b, a},
				"receivedAfter=" + at(45*time.Minute) + "&receivedBefore=" + at(35*time.Minute): {b},
				"receivedAfter=" + at(365*24*time.Hour):                                         {keyed, c, b, a},
				"state=DONE&provider=GITHUB":                                                    {keyed, a},
			} {
				Expect(itemIDs(call("GET", deliveries(acme)+"?"+query, acmeMember.Token, nil))).To(Equal(want), query)
			}
		})

		It("answers 400 naming the field for an unknown filter field or a bad value", func() {
			for query, field := range map[string]string{
				"colour=red":                               "colour",
				"state=SLEEPING":                           "state",
				"provider=github!":                         "provider",
				"receivedAfter=yesterday":                  "receivedAfter",
				"receivedBefore=2026-13-01T00:00:00Z":      "receivedBefore",
				"state=DONE&state=DEAD":                    "state",
				"page=-1":                                  "page",
				"size=201":                                 "size",
				"page=50&size=200":                         "page",
				"provider=BITBUCKET":                       "provider",
				"errorClass=no-such-class":                 "errorClass",
				"errorClass=PERMANENT":                     "errorClass",
				"errorClass=FATAL%3A%2Aerrors.errorString": "errorClass",
			} {
				r := call("GET", deliveries(acme)+"?"+query, acmeMember.Token, nil)
				Expect(r.Status).To(Equal(http.StatusBadRequest), query)
				Expect(r.JSON).To(HaveKeyWithValue("field", field), query)
				if field != "page" && field != "size" {
					Expect(r.JSON).To(HaveKeyWithValue("error", "invalid-filter"), query)
				}
			}
			for _, query := range []string{"provider=BITBUCKET", "errorClass=bogus", "receivedBefore=soon"} {
				r := call("GET", "/api/admin/integration/deliveries?"+query, operator.Token, nil)
				Expect(r.Status).To(Equal(http.StatusBadRequest), query)
				Expect(r.JSON).To(HaveKeyWithValue("error", "invalid-filter"), query)
			}
			// Every error class the claimers and the reaper record is a valid filter value.
			for _, class := range []string{"PERMANENT:*json.SyntaxError", "UNKNOWN:panic(string)", "LeaseExpired", "TRANSIENT:*net.OpError"} {
				r := call("GET", deliveries(acme)+"?errorClass="+url.QueryEscape(class), acmeMember.Token, nil)
				Expect(r.Status).To(Equal(http.StatusOK), class)
			}
		})

		It("counts exactly up to the cap and says when it stopped counting", func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `
				INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, state, ended_at)
				SELECT $1::bigint, 'GITHUB', 'issues', 'bulk-' || g, 'ws:' || $1::bigint || ':github:repository:1',
				       'github:repository:1', '{}', 'DONE', now()
				FROM generate_series(1, $2::int) g`, acme.ID, ports.DeliveryListCap+5)
			Expect(err).NotTo(HaveOccurred())
			r := call("GET", deliveries(acme)+"?size=10", acmeMember.Token, nil)
			Expect(itemIDs(r)).To(HaveLen(10))
			Expect(r.JSON).To(HaveKeyWithValue("total", BeNumerically("==", ports.DeliveryListCap)))
			Expect(r.JSON).To(HaveKeyWithValue("totalCapped", true))
			Expect(call("GET", deliveries(acme)+"?size=200&page=49", acmeMember.Token, nil).Status).To(Equal(http.StatusOK), "the last page within the cap")
		})
	})

	Describe("one delivery", func() {
		It("shows payload, headers, committed steps and every attempt with the failure table's sentence, to any member", func(ctx SpecContext) {
			id := insertRow(ctx, pool, row{Workspace: acme.ID, Payload: `{"action":"edited"}`})
			policy, err := inbox.NewRetryPolicy(time.Millisecond, time.Millisecond, 3)
			Expect(err).NotTo(HaveOccurred())

			claimed, err := inboxStore.Claim(ctx, "server-a", 1, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(claimed).To(HaveLen(1))
			d := claimed[0].Delivery
			refused := &inbox.ProviderError{Provider: "github", Op: "GET /repos", Kind: inbox.ProviderRefused, Status: 422,
				Err: fmt.Errorf("token ghp_secret refused")}
			dec, err := d.Fail(d.Lease().Epoch(), refused, policy, time.Now())
			Expect(err).NotTo(HaveOccurred())
			_, err = inboxStore.Record(ctx, []ports.Result{{Ack: ports.Ack{ID: id, Epoch: d.Lease().Epoch()}, Decision: dec}})
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() []ports.Claimed {
				claimed, err = inboxStore.Claim(ctx, "server-b", 1, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				return claimed
			}).WithTimeout(quick).Should(HaveLen(1))
			addStep(ctx, id, "mirror-issue")
			d = claimed[0].Delivery
			_, err = inboxStore.Record(ctx, []ports.Result{{Ack: ports.Ack{ID: id, Epoch: d.Lease().Epoch()}, Decision: inbox.Completed()}})
			Expect(err).NotTo(HaveOccurred())

			for _, who := range []accountFixture{acmeMember, operator} {
				r := call("GET", fmt.Sprintf("%s/%d", deliveries(acme), id), who.Token, nil)
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				Expect(r.JSON).To(HaveKeyWithValue("state", "DONE"))
				Expect(r.JSON).To(HaveKeyWithValue("payload", HaveKeyWithValue("action", "edited")))
				Expect(r.JSON).To(HaveKeyWithValue("headers", HaveKey("X-GitHub-Event")))
				Expect(r.JSON).To(HaveKeyWithValue("replayedBy", BeNil()))
				Expect(r.JSON).To(HaveKeyWithValue("replayedAt", BeNil()))
				Expect(r.JSON).To(HaveKeyWithValue("lastAttemptAt", Not(BeNil())))
				Expect(r.JSON["steps"]).To(ConsistOf(And(HaveKeyWithValue("name", "mirror-issue"), HaveKey("committedAt"))))
				attempts := r.JSON["attempts"].([]any)
				Expect(attempts).To(HaveLen(2))
				first, second := attempts[0].(map[string]any), attempts[1].(map[string]any)
				Expect(first).To(HaveKeyWithValue("attempt", BeNumerically("==", 1)))
				Expect(first).To(HaveKeyWithValue("server", "server-a"))
				Expect(first).To(HaveKeyWithValue("outcome", "retried"))
				Expect(first).To(HaveKeyWithValue("errorClass", "provider-refused"))
				Expect(first).To(HaveKeyWithValue("errorText", inbox.CauseProviderRefused.Sentence()))
				Expect(first).To(HaveKeyWithValue("durationMs", BeNumerically(">=", 0)))
				Expect(second).To(HaveKeyWithValue("attempt", BeNumerically("==", 2)))
				Expect(second).To(HaveKeyWithValue("server", "server-b"))
				Expect(second).To(HaveKeyWithValue("outcome", "done"))
				Expect(second).To(HaveKeyWithValue("errorClass", BeNil()))
				Expect(second).To(HaveKeyWithValue("errorText", BeNil()))
				Expect(r.Raw).NotTo(ContainSubstring("ghp_secret"), "never an exception message")
			}
		})

		It("is 404 for a row of another workspace or of the installation, and 403 for a non-member", func(ctx SpecContext) {
			theirs := insertRow(ctx, pool, row{Workspace: globex.ID, State: "DONE"})
			installation := insertRow(ctx, pool, row{State: "DONE"})
			ours := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE"})
			Expect(call("GET", fmt.Sprintf("%s/%d", deliveries(acme), theirs), acmeMember.Token, nil).Status).To(Equal(http.StatusNotFound))
			Expect(call("GET", fmt.Sprintf("%s/%d", deliveries(acme), installation), operator.Token, nil).Status).To(Equal(http.StatusNotFound))
			Expect(call("GET", fmt.Sprintf("%s/%d", deliveries(acme), ours), globexMember.Token, nil).Status).To(Equal(http.StatusForbidden))
			Expect(call("GET", fmt.Sprintf("%s/%d", deliveries(globex), ours), globexMember.Token, nil).Status).To(Equal(http.StatusNotFound))
			Expect(call("GET", fmt.Sprintf("%s/abc", deliveries(acme)), acmeMember.Token, nil).Status).To(Equal(http.StatusNotFound))
		})
	})

	Describe("installation rows", func() {
		It("are the instance administrator's: listed and read under /api/admin, refused to workspace members", func(ctx SpecContext) {
			inst := insertRow(ctx, pool, row{State: "DEAD"})
			ours := insertRow(ctx, pool, row{Workspace: acme.ID, State: "DONE"})

			for _, token := range []string{adminToken, operator.Token} {
				r := call("GET", "/api/admin/integration/deliveries", token, nil)
				Expect(itemIDs(r)).To(Equal([]int64{inst}))
				detail := call("GET", fmt.Sprintf("/api/admin/integration/deliveries/%d", inst), token, nil)
				Expect(detail.Status).To(Equal(http.StatusOK), detail.Raw)
				Expect(detail.JSON).To(HaveKeyWithValue("state", "DEAD"))
				Expect(call("GET", fmt.Sprintf("/api/admin/integration/deliveries/%d", ours), token, nil).Status).To(Equal(http.StatusNotFound))
			}
			for _, who := range []accountFixture{acmeAdmin, acmeMember} {
				Expect(call("GET", "/api/admin/integration/deliveries", who.Token, nil).Status).To(Equal(http.StatusForbidden))
				Expect(call("GET", fmt.Sprintf("/api/admin/integration/deliveries/%d", inst), who.Token, nil).Status).To(Equal(http.StatusForbidden))
			}
			Expect(call("GET", "/api/admin/integration/deliveries", "", nil).Status).To(Equal(http.StatusUnauthorized))
			Expect(call("GET", "/api/admin/integration/deliveries?state=LOST", adminToken, nil).JSON).To(HaveKeyWithValue("field", "state"))
		})
	})
})
