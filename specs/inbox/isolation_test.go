package inbox_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Isolation of the main pool", func() {
	When("an operator sets the database's default isolation to SERIALIZABLE", func() {
		It("still works many servers' rows in each scope's order, because every main-pool session starts at READ COMMITTED", func(ctx SpecContext) {
			const (
				servers  = 3
				claimers = 4
				rows     = 1500
				scopes   = 30
			)
			// The spec's own database, so the setting touches no other spec.
			sdb := support.Database(ctx)
			admin := support.Pool(ctx, sdb, 2)
			_, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET default_transaction_isolation = 'serializable'`, sdb.Name))
			Expect(err).NotTo(HaveOccurred())
			plain := support.Pool(ctx, sdb, 2) // opened after the ALTER: its sessions take the new default
			Expect(support.Scalar[string](ctx, plain, `SHOW default_transaction_isolation`)).To(Equal("serializable"),
				"the precondition: a session without the pool setting is SERIALIZABLE")

			mainPool := func(maxConns int32) *pgxpool.Pool {
				cfg, err := pgxpool.ParseConfig(sdb.URL)
				Expect(err).NotTo(HaveOccurred())
				cfg.MaxConns = maxConns
				bootstrap.ConfigureMainPool(cfg)
				p, err := pgxpool.NewWithConfig(ctx, cfg)
				Expect(err).NotTo(HaveOccurred())
				return p
			}

			ws := newWorkspace(ctx, plain, "acme", "ACTIVE")
			storeRows(ctx, plain, ws, overScopes(rows, scopes), `{"action":"opened"}`)

			log := newScopeLog()
			handler := log.failingAtRandom(func(p float64) error {
				switch {
				case p < 0.05:
					return errors.New("unknown failure")
				case p < 0.08:
					return &inbox.ProviderError{Provider: "github", Op: "GET /x", Kind: inbox.ProviderServerError, Status: 502}
				}
				return nil
			})
			var started []*server
			for i := range servers {
				p := mainPool(claimers + 4)
				DeferCleanup(p.Close) // registered first, so it runs after the consumer stopped
				Expect(support.Scalar[string](ctx, p, `SHOW default_transaction_isolation`)).To(Equal("read committed"))
				st, err := inboxstore.New(p, inboxstore.Config{})
				Expect(err).NotTo(HaveOccurred())
				started = append(started, startServer(contendingConfig(i, claimers), st, registry(handler)))
			}

			Eventually(func() int { return countRows(ctx, plain, "state = 'DONE'") }).
				WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Equal(rows))
			expectScopeOrder(ctx, plain, log)
			for _, s := range started {
				Expect(s.log.Find("failed; backing off")).To(BeEmpty(), "no claim or reap failed: %s", s.log.Text())
				Expect(s.log.Find("failed; retrying")).To(BeEmpty(), "no outcome or renewal write failed")
				Expect(s.metrics.Count("retry", "github", inbox.CauseDatabaseConflict.String())).To(BeZero())
			}
		})
	})
})
