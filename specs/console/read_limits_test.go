package console_test

import (
	"context"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Inbox pages of one account", func() {
	It("count with the account's API reads: past the limit a page says to retry (429), and loads again once they ended", func(ctx SpecContext) {
		f := newFixture(ctx)
		b := newClient()
		b.signIn(f.ana.Token)

		// Every read of the inbox waits behind this lock until the spec releases it.
		tx, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = tx.Exec(ctx, `LOCK TABLE provider_event IN ACCESS EXCLUSIVE MODE`)
		Expect(err).NotTo(HaveOccurred())
		var once sync.Once
		release := func() { once.Do(func() { Expect(tx.Rollback(context.WithoutCancel(ctx))).To(Succeed()) }) }
		DeferCleanup(release)

		// One read through the API, one through the console, both held by the lock.
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		wg.Add(2)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			req, err := http.NewRequest(http.MethodGet, server.URL+"/api/workspaces/acme/integration/deliveries", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Authorization", "Bearer "+f.ana.Token)
			res, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			statuses[0] = read(res).Status
		}()
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			statuses[1] = b.get("/console/workspaces/acme/dead-letters").Status
		}()
		Eventually(func(ctx context.Context) (int, error) {
			var n int
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
				AND query LIKE '%provider_event%' AND pid <> pg_backend_pid()`).Scan(&n)
			return n, err
		}).WithContext(ctx).Should(BeNumerically(">=", 2))

		for _, path := range []string{"/console/workspaces/acme/deliveries", "/console/workspaces", "/console/workspaces/acme/rejections"} {
			a := b.get(path)
			Expect(a.Status).To(Equal(http.StatusTooManyRequests), path)
			Expect(a.Header.Get("Retry-After")).NotTo(BeEmpty(), path)
			Expect(a.Body).To(ContainSubstring("You have as many inbox pages loading as you may at once"), path)
		}

		release()
		wg.Wait()
		Expect(statuses).To(Equal([]int{http.StatusOK, http.StatusOK}))
		Expect(b.get("/console/workspaces/acme/deliveries").Status).To(Equal(http.StatusOK))
	})
})
