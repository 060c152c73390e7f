package inbox_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Shutdown", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
	})

	When("Run's context is cancelled (SIGTERM) while handlers run", func() {
		It("releases the leases it holds without counting the attempt", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.Claimers = 1
			cfg.ClaimAhead = 2 // two rows wait for the worker: held, never started
			cfg.ShutdownGrace = 200 * time.Millisecond
			var started atomic.Int32
			srv := startServer(cfg, store, registry(func(ctx context.Context, _ ports.Dispatch) error {
				started.Add(1)
				<-ctx.Done() // a long handler that honours cancellation
				return ctx.Err()
			}))
			ids := []int64{
				storeRow(ctx, pool, row{Workspace: ws, Repo: "a"}),
				storeRow(ctx, pool, row{Workspace: ws, Repo: "b"}),
				storeRow(ctx, pool, row{Workspace: ws, Repo: "c"}),
			}
			Eventually(func() int { return countRows(ctx, pool, "state = 'LEASED'") }).WithTimeout(5 * time.Second).Should(Equal(3))
			Eventually(started.Load).Should(Equal(int32(1)))

			Expect(srv.stop()).To(Succeed())
			for _, id := range ids {
				r := readRow(ctx, pool, id)
				Expect(r.State).To(Equal("QUEUED"), "row %d", id)
				Expect(r.Attempt).To(BeZero(), "row %d", id)
				Expect(r.UnknownFailures).To(BeZero(), "row %d", id)
				Expect(r.Leased).To(BeFalse(), "row %d", id)
			}
			Expect(started.Load()).To(Equal(int32(1)), "no new handler starts once stopping")
			Expect(srv.metrics.Count("handled", "github", "retried")).To(BeZero())
			Expect(srv.log.Find("released leases on shutdown")).To(HaveLen(1))
		})
	})

	When("a running handler finishes within the grace", func() {
		It("records its outcome instead of releasing it", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.ShutdownGrace = 5 * time.Second
			entered := make(chan struct{})
			srv := startServer(cfg, store, registry(func(ctx context.Context, _ ports.Dispatch) error {
				close(entered)
				// Work that outlives the stop signal: the sleep is the behaviour under test (a
				// handler still running when the stop begins), not a wait for an effect.
				time.Sleep(300 * time.Millisecond)
				return ctx.Err()
			}))
			id := storeRow(ctx, pool, row{Workspace: ws})
			Eventually(entered).WithTimeout(5 * time.Second).Should(BeClosed())
			Expect(srv.stop()).To(Succeed())
			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("DONE"))
			Expect(r.Attempt).To(Equal(1))
		})
	})

	When("a handler ignores its cancelled context and the stop has a budget", func() {
		It("still returns within the budget and releases the lease instead of leaving it to expire", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.ShutdownGrace = 10 * time.Second // alone, the waits would add up past a minute
			cfg.ShutdownTimeout = 10 * time.Second
			cfg.StopBudget = 2 * time.Second
			entered, unblock := make(chan struct{}), make(chan struct{})
			srv := startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error {
				close(entered)
				<-unblock // a handler stuck in a call that does not honour its context
				return nil
			}))
			// The stuck goroutine ends with the spec, after Run gave up on it.
			DeferCleanup(func() { close(unblock) })
			id := storeRow(ctx, pool, row{Workspace: ws})
			Eventually(entered).WithTimeout(5 * time.Second).Should(BeClosed())

			start := time.Now()
			Expect(srv.stop()).To(Succeed())
			Expect(time.Since(start)).To(BeNumerically("<", cfg.StopBudget+500*time.Millisecond))
			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("QUEUED"), "released, not left LEASED until its lease expires")
			Expect(r.Attempt).To(BeZero())
			Expect(r.Leased).To(BeFalse())
		})
	})
})
