package operators_test

import (
	"context"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Operator reads of one account", func() {
	var (
		acme          workspaceFixture
		member, admin accountFixture
		operatorLogin accountFixture
		lockHeld      func()
	)

	BeforeEach(func(ctx SpecContext) {
		acme = newWorkspace(ctx, "acme")
		member = newAccount(ctx, "bob", false, acme, "MEMBER")
		admin = newAccount(ctx, "ana", false, acme, "ADMIN")
		operatorLogin = newAccount(ctx, "ops", true, acme, "")
		insertRow(ctx, pool, row{Workspace: acme.ID, State: "DEAD"})

		// Every read of the inbox waits behind this lock until it is released, so reads stay in
		// flight for as long as the spec needs (no claimer runs in this suite).
		tx, err := other.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = tx.Exec(ctx, `LOCK TABLE provider_event IN ACCESS EXCLUSIVE MODE`)
		Expect(err).NotTo(HaveOccurred())
		var once sync.Once
		lockHeld = func() { once.Do(func() { Expect(tx.Rollback(context.WithoutCancel(ctx))).To(Succeed()) }) }
		DeferCleanup(func() { lockHeld() })
	})

	// waiting counts the statements that wait for the spec's lock on provider_event.
	waiting := func(ctx context.Context) (int, error) {
		var n int
		err := other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%provider_event%' AND pid <> pg_backend_pid()`).Scan(&n)
		return n, err
	}

	// inFlight sends each GET in the background; the returned function waits for their answers.
	inFlight := func(requests ...[2]string) func() []response {
		var (
			wg  sync.WaitGroup
			out = make([]response, len(requests))
		)
		for i, r := range requests {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				out[i] = call("GET", r[0], r[1], nil)
			}()
		}
		return func() []response { wg.Wait(); return out }
	}

	It("are at most the limit in flight: one more is 429 retry at once, other accounts' reads go on", func(ctx SpecContext) {
		Expect(readsPerAccount).To(Equal(2))
		held := inFlight(
			[2]string{"/api/workspaces/acme/integration/deliveries", member.Token},
			[2]string{"/api/workspaces/acme/integration/deliveries?provider=GITHUB", member.Token},
		)
		Eventually(waiting).WithContext(ctx).Should(BeNumerically(">=", 2), "the member's two reads wait on the inbox")

		for _, path := range []string{"/api/workspaces/acme/integration/deliveries?state=DEAD", "/api/workspaces/acme/integration/deliveries/1"} {
			r := call("GET", path, member.Token, nil)
			Expect(r.Status).To(Equal(http.StatusTooManyRequests), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "retry"}))
			Expect(r.Header.Get("Retry-After")).NotTo(BeEmpty())
		}

		// Another account, and the instance administrator, are not limited by the member's reads.
		others := inFlight(
			[2]string{"/api/workspaces/acme/integration/dead-letters", admin.Token},
			[2]string{"/api/workspaces/acme/integration/inbox", admin.Token},
			[2]string{"/api/admin/integration/deliveries", operatorLogin.Token},
		)
		Eventually(waiting).WithContext(ctx).Should(BeNumerically(">=", 5), "the other accounts' reads wait on the inbox too, not refused")

		lockHeld()
		for _, r := range append(held(), others()...) {
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		}
		// The member's reads ended: it reads again.
		r := call("GET", "/api/workspaces/acme/integration/deliveries", member.Token, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	})

	It("count the instance administrator's routes against the same limit", func(ctx SpecContext) {
		held := inFlight(
			[2]string{"/api/admin/integration/dead-letters", operatorLogin.Token},
			[2]string{"/api/admin/integration/deliveries", operatorLogin.Token},
		)
		Eventually(waiting).WithContext(ctx).Should(BeNumerically(">=", 2))
		r := call("GET", "/api/admin/integration/rejections", operatorLogin.Token, nil)
		Expect(r.Status).To(Equal(http.StatusTooManyRequests), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"error": "retry"}))
		lockHeld()
		for _, r := range held() {
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		}
	})
})
