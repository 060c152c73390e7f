package tenancy_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/application/accessrecheck"
)

var _ = Describe("The periodic access recheck", func() {
	var (
		wsA, wsB int64
		adminB   string
		pat      int64
		n        int
	)
	deliver := func() response {
		GinkgoHelper()
		n++
		return deliverIssue(installationA, repoOfA, "recheck-"+itoa(int64(n)))
	}

	BeforeEach(func() {
		wsA, _ = workspace("acme")
		wsB, adminB = workspace("globex")
		appA := appConnection("acme", installationA)
		Expect(subscribe("acme", adminToken, appA, repository(repoOfA)).Status).To(Equal(http.StatusOK))
		fakeGitHub.grant("ghp_token", repoOfA)
		r := patConnection("globex", adminB, "ghp_token")
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		pat = r.ID("id")
		Expect(subscribe("globex", adminB, pat, repository(repoOfA)).Status).To(Equal(http.StatusOK))
	})

	It("revokes access the token lost: the subscription shows REVOKED with the reason and stops receiving", func(ctx SpecContext) {
		Expect(deliver().JSON).To(HaveKeyWithValue("stored", 2.0)) // and the receiver remembers the routes
		version := count(ctx, `SELECT config_version FROM connection WHERE id = $1`, pat)

		fakeGitHub.revoke("ghp_token", repoOfA)
		st, err := recheckServer(ctx, "server-1").RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st).To(Equal(accessrecheck.Stats{Ran: true, Checked: 1, Revoked: 1}))

		r := call(http.MethodGet, subscriptionsPath("globex", pat), adminB, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON["resources"]).To(ConsistOf(And(
			HaveKeyWithValue("access", "REVOKED"),
			HaveKeyWithValue("accessReason", "repository-not-found"),
			HaveKey("accessCheckedAt"))))
		Expect(count(ctx, `SELECT config_version FROM connection WHERE id = $1`, pat)).To(Equal(version + 1))

		Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
		Expect(storedFor(ctx, wsA)).To(Equal(2))
		Expect(storedFor(ctx, wsB)).To(Equal(1), "only the delivery before the revocation")
	})

	It("keeps access when the provider gives no answer, and keeps verified access that still holds", func(ctx SpecContext) {
		fakeGitHub.force(repoOfA, -1, nil)
		st, err := recheckServer(ctx, "server-1").RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st).To(Equal(accessrecheck.Stats{Ran: true, Unavailable: 1}))
		Expect(column(ctx, `SELECT access FROM connection_subscription WHERE connection_id = $1`, pat)).To(Equal([]string{"VERIFIED"}))

		fakeGitHub.force(repoOfA, 0, nil)
		st, err = recheckServer(ctx, "server-1").RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st).To(Equal(accessrecheck.Stats{Ran: true, Checked: 1}))
		Expect(deliver().JSON).To(HaveKeyWithValue("stored", 2.0))
	})

	It("lets no delivery that starts after a revocation committed reach the workspace, while deliveries race it", func(ctx SpecContext) {
		var (
			revoked atomic.Bool
			stop    = make(chan struct{})
			wg      sync.WaitGroup
		)
		for s := range 4 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					phase := "before"
					if revoked.Load() {
						phase = "after"
					}
					r := deliverIssue(installationA, repoOfA, fmt.Sprintf("%s-%d-%d", phase, s, i))
					// 503: the route changed while admission waited for the lock; GitHub retries.
					Expect(r.Status).To(BeElementOf(http.StatusAccepted, http.StatusServiceUnavailable), r.Raw)
				}
			}()
		}
		Eventually(func() int { return storedFor(ctx, wsB) }).WithContext(ctx).Should(BeNumerically(">=", 20))

		fakeGitHub.revoke("ghp_token", repoOfA)
		st, err := recheckServer(ctx, "server-2").RunOnce(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Revoked).To(Equal(1))
		revoked.Store(true)
		Eventually(func() int {
			return count(ctx, `SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND delivery_key LIKE 'after-%'`, wsA)
		}).WithContext(ctx).Should(BeNumerically(">=", 20))
		close(stop)
		wg.Wait()

		Expect(count(ctx, `SELECT count(*) FROM provider_event WHERE workspace_id = $1 AND delivery_key LIKE 'after-%'`, wsB)).To(BeZero())
	})

	It("runs on one server at a time", func(ctx SpecContext) {
		servers := []*accessrecheck.Recheck{recheckServer(ctx, "server-1"), recheckServer(ctx, "server-2")}
		stats := make([]accessrecheck.Stats, len(servers))
		var wg sync.WaitGroup
		for i, s := range servers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				var err error
				stats[i], err = s.RunOnce(ctx)
				Expect(err).NotTo(HaveOccurred())
			}()
		}
		wg.Wait()
		Expect(stats).To(ConsistOf(accessrecheck.Stats{Ran: true, Checked: 1}, accessrecheck.Stats{}))
		Expect(fakeGitHub.recorded()).To(HaveLen(2), "the subscription's check and one recheck")
	})

	When("subscriptions were stored before access was checked (migration 00010)", func() {
		BeforeEach(func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `UPDATE connection_subscription
				SET access = 'UNVERIFIED', access_reason = 'not-yet-verified', access_checked_at = NULL
				WHERE connection_id = $1`, pat)
			Expect(err).NotTo(HaveOccurred())
		})

		It("routes nothing to them until the recheck verifies them with the token", func(ctx SpecContext) {
			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsB)).To(BeZero())

			st, err := recheckServer(ctx, "server-1").RunOnce(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(st).To(Equal(accessrecheck.Stats{Ran: true, Checked: 1, Verified: 1}))
			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 2.0))
			Expect(storedFor(ctx, wsB)).To(Equal(1))
		})

		It("shows a PAT connection without a token as UNVERIFIED token-missing, and checks nothing for it", func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = NULL WHERE id = $1`, pat)
			Expect(err).NotTo(HaveOccurred())
			r := call(http.MethodGet, "/api/workspaces/globex/connections", adminB, nil)
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(r.JSON["items"]).To(ConsistOf(And(HaveKeyWithValue("access", "UNVERIFIED"), HaveKeyWithValue("accessReason", "token-missing"))))

			st, err := recheckServer(ctx, "server-1").RunOnce(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(st).To(Equal(accessrecheck.Stats{Ran: true}))
			Expect(fakeGitHub.recorded()).To(HaveLen(1), "only the original subscription's check")
			Expect(deliver().JSON).To(HaveKeyWithValue("stored", 1.0))
			Expect(storedFor(ctx, wsB)).To(BeZero())

			r = subscribe("globex", adminB, pat, repository(repoOfA))
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "secret-required"}))
		})
	})
})
