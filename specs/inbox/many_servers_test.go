package inbox_test

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = Describe("Many servers", func() {
	It("work 5,000 rows over 50 scopes in each scope's order, one leased row per scope, while handlers fail at random", func(ctx SpecContext) {
		const (
			servers  = 3
			claimers = 4
			rows     = 5000
			scopes   = 50
		)
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		storeRows(ctx, pool, ws, overScopes(rows, scopes), `{"action":"opened"}`)

		log := newScopeLog()
		handler := log.failingAtRandom(func(p float64) error {
			switch {
			case p < 0.08:
				return errors.New("unknown failure")
			case p < 0.12:
				return inbox.Transient("provider", errors.New("timeout"))
			}
			return nil
		})
		for i := range servers {
			// Each server has its own pool, store and consumer, as separate processes would.
			p, err := db.Pool(ctx, claimers+4)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close) // registered first, so it runs after the consumer stopped
			st, err := inboxstore.New(p, inboxstore.Config{})
			Expect(err).NotTo(HaveOccurred())
			startServer(contendingConfig(i, claimers), st, registry(handler))
		}

		Eventually(func() int { return countRows(ctx, pool, "state = 'DONE'") }).
			WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Equal(rows))
		expectScopeOrder(ctx, pool, log)
		Expect(countRows(ctx, pool, "attempt > 1")).To(BeNumerically(">", 0), "some handlers failed")
		Expect(countRows(ctx, pool, "unknown_failures > 0")).To(BeNumerically(">", 0))
	})
})
