package inbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
	"github.com/hephaestus-dev/hephaestus/internal/pgembedded"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Database outage", func() {
	It("backs off while PostgreSQL is down and recovers without a restart, every row DONE in order", func(ctx SpecContext) {
		// Its own cluster: the shared one is never stopped.
		parent, err := os.MkdirTemp("", "hx-outage-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, parent)
		opts := pgembedded.Options{DataDir: filepath.Join(parent, "data")}
		cluster, err := pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(cluster.Stop(context.Background())).To(Succeed()) })
		_, err = postgres.Migrate(ctx, cluster.URL())
		Expect(err).NotTo(HaveOccurred())
		p, err := pgxpool.New(ctx, cluster.URL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		st := storeOn(p, clock)

		ws := newWorkspace(ctx, p, "acme", "ACTIVE")
		long := storeRow(ctx, p, row{Workspace: ws, Repo: "long"})
		repos := make([]string, 300)
		for i := range repos {
			repos[i] = fmt.Sprintf("%d", i%10)
		}
		storeRows(ctx, p, ws, repos, `{}`)

		const lease = 30 * time.Second
		finish := make(chan struct{})
		var longStarted atomic.Bool
		log := newScopeLog()
		cfg := specConfig(owner)
		cfg.LeaseDuration = lease
		cfg.RenewInterval = 300 * time.Millisecond
		cfg.ReaperInterval = 300 * time.Millisecond
		cfg.BackoffMin = 50 * time.Millisecond
		cfg.BackoffMax = 400 * time.Millisecond
		srv := startServer(cfg, st, registry(func(ctx context.Context, d ports.Dispatch) error {
			log.enter(d)
			if d.Delivery.ID() == long {
				// Runs through the outage and, on the spec's clock, more than a whole lease
				// after it: only renewals that recovered keep this lease.
				longStarted.Store(true)
				<-finish
			} else {
				// Handling takes a while, so the outage finds rows in flight and rows waiting.
				time.Sleep(20 * time.Millisecond)
			}
			log.exit(d, true)
			return nil
		}))
		release := sync.OnceFunc(func() { close(finish) })
		DeferCleanup(release) // registered after the server: a failed spec still lets it stop

		Eventually(func() int { return countRows(ctx, p, "state = 'DONE'") }).
			WithTimeout(10 * time.Second).Should(BeNumerically(">=", 20))
		Expect(longStarted.Load()).To(BeTrue())
		leasedUntil := func() (time.Time, error) {
			var t time.Time
			err := p.QueryRow(ctx, `SELECT leased_until FROM provider_event WHERE id = $1`, long).Scan(&t)
			return t, err
		}
		atOutage, err := leasedUntil()
		Expect(err).NotTo(HaveOccurred())
		Expect(cluster.Stop(ctx)).To(Succeed())

		for _, failing := range []string{"claiming failed", "renewing leases failed", "reaping failed"} {
			Eventually(func() []logEntry { return srv.log.Find(failing) }).
				WithTimeout(10*time.Second).ShouldNot(BeEmpty(), failing)
		}
		opts.Port = cluster.Port() // the same URL as before
		cluster, err = pgembedded.Start(ctx, opts)
		Expect(err).NotTo(HaveOccurred())

		// Move past the lease as it stood when the database went down, half a lease at a time,
		// each step only once a renewal from the moved clock covered it.
		for !clock.Now().After(atOutage.Add(time.Second)) {
			clock.Advance(lease / 2)
			due := clock.Now().Add(lease * 3 / 4)
			Eventually(leasedUntil).WithTimeout(30*time.Second).Should(BeTemporally(">", due),
				"the renewer recovered and renews from the moved clock")
		}
		release()

		Eventually(func() int { return countRows(ctx, p, "state = 'DONE'") }).
			WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(301))
		expectScopeOrder(ctx, p, log)
		r := readRow(ctx, p, long)
		Expect(r.Attempt).To(Equal(1), "the long handler's lease survived the outage")
		Expect(r.UnknownFailures).To(BeZero())
		Expect(srv.metrics.Count("dropped", "github", "lease-lost")).To(BeZero())
	})
})
