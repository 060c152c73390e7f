package inbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// dispatchKey is the context key a spec's DispatchContext binds.
type dispatchKey struct{}

// failingRetention is the real store whose retention deletes fail.
type failingRetention struct {
	ports.InboxStore
	calls atomic.Int32
}

func (f *failingRetention) DeleteEnded(context.Context, time.Time, time.Time, int) (int64, error) {
	f.calls.Add(1)
	return 0, errors.New("disk on fire")
}

// countingClaims is the real store that counts finished claims.
type countingClaims struct {
	ports.InboxStore
	done atomic.Int64
}

func (c *countingClaims) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	defer c.done.Add(1)
	return c.InboxStore.Claim(ctx, owner, limit, lease)
}

var _ = Describe("The consumer", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
	})

	Describe("Dispatch", func() {
		It("passes the row's workspace, payload and headers, in the context DispatchContext built", func(ctx SpecContext) {
			got := make(chan ports.Dispatch, 2)
			bound := make(chan any, 2)
			cfg := specConfig(owner)
			cfg.DispatchContext = func(ctx context.Context, c ports.Claimed) context.Context {
				return context.WithValue(ctx, dispatchKey{}, c.Delivery.ID())
			}
			reg := consumer.NewRegistry()
			h := ports.HandlerFunc(func(ctx context.Context, d ports.Dispatch) error {
				got <- d
				bound <- ctx.Value(dispatchKey{})
				return nil
			})
			Expect(reg.Register(github, "issues", h)).To(Succeed())
			Expect(reg.Register(github, "installation", h)).To(Succeed())
			startServer(cfg, store, reg)

			work := storeRow(ctx, pool, row{Workspace: ws, Payload: `{"n":1}`})
			var d ports.Dispatch
			Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&d))
			Expect(d.Delivery.ID()).To(Equal(work))
			Expect(d.WorkspaceID).To(Equal(ws))
			Expect(d.Payload).To(MatchJSON(`{"n":1}`))
			Expect(d.Headers).To(HaveKeyWithValue("X-GitHub-Event", "issues"))
			Expect(<-bound).To(Equal(work))

			installation := storeRow(ctx, pool, row{Control: true, EventType: "installation"})
			Eventually(got).WithTimeout(5 * time.Second).Should(Receive(&d))
			Expect(d.Delivery.ID()).To(Equal(installation))
			Expect(d.WorkspaceID).To(BeZero())
		})

		It("completes an event type without a handler as done, not as a failure", func(ctx SpecContext) {
			srv := startServer(specConfig(owner), store, consumer.NewRegistry())
			id := storeRow(ctx, pool, row{Workspace: ws, EventType: "star"})
			Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(5 * time.Second).Should(Equal("DONE"))
			Eventually(func() int { return srv.metrics.Count("handled", "github", "done") }).Should(Equal(1))
			Expect(readRow(ctx, pool, id).UnknownFailures).To(BeZero())
		})

		Describe("a row gone when its outcome is written", func() {
			var box *deliveryinbox.Inbox
			BeforeEach(func() {
				var err error
				box, err = deliveryinbox.New(pool)
				Expect(err).NotTo(HaveOccurred())
			})

			It("counts a handler whose committed step deleted its own event as successful handling", func(ctx SpecContext) {
				srv := startServer(fencedConfig(owner), store, registry(func(ctx context.Context, d ports.Dispatch) error {
					_, err := box.Step(ctx, inbox.MustStep("spec.uninstall"), func(ctx context.Context, tx ports.Tx) error {
						tx.DeletesOwnEvent()
						ptx, err := sqlkit.PgxTx(tx)
						if err != nil {
							return err
						}
						_, err = ptx.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, d.Delivery.ID())
						return err
					})
					return err
				}))
				id := storeRow(ctx, pool, row{Workspace: ws})
				Eventually(func() int { return srv.metrics.Count("handled", "github", "done") }).WithTimeout(5 * time.Second).Should(Equal(1))
				Expect(countRows(ctx, pool, "id = $1", id)).To(BeZero())
				Expect(srv.metrics.Count("dropped", "github", "erased-during-processing")).To(BeZero())
				Expect(srv.metrics.Count("dropped", "github", "lease-lost")).To(BeZero())
				Expect(srv.metrics.Count("handled", "github", "dropped")).To(BeZero())
			})

			It("drops a delivery erased after its handler's last write as erased during processing, not done", func(ctx SpecContext) {
				srv := startServer(fencedConfig(owner), store, registry(func(ctx context.Context, d ports.Dispatch) error {
					if _, err := box.Step(ctx, inbox.MustStep("spec.write"), func(context.Context, ports.Tx) error { return nil }); err != nil {
						return err
					}
					// Person erasure deletes the row after the last fenced write committed; the
					// handler has nothing left to write and returns successfully.
					_, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, d.Delivery.ID())
					return err
				}))
				id := storeRow(ctx, pool, row{Workspace: ws})
				Eventually(func() int { return srv.metrics.Count("dropped", "github", "erased-during-processing") }).
					WithTimeout(5 * time.Second).Should(Equal(1))
				Expect(countRows(ctx, pool, "id = $1", id)).To(BeZero())
				Expect(srv.metrics.Count("handled", "github", "dropped")).To(Equal(1))
				Expect(srv.metrics.Count("handled", "github", "done")).To(BeZero())
				Expect(srv.metrics.Count("dropped", "github", "lease-lost")).To(BeZero())
			})
		})

		It("drops a failed delivery whose row was erased meanwhile as erased-during-processing, without a retry", func(ctx SpecContext) {
			srv := startServer(specConfig(owner), store, registry(func(ctx context.Context, d ports.Dispatch) error {
				if _, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, d.Delivery.ID()); err != nil {
					return err
				}
				return errors.New("the handler failed after erasure removed its event")
			}))
			storeRow(ctx, pool, row{Workspace: ws})
			Eventually(func() int { return srv.metrics.Count("dropped", "github", "erased-during-processing") }).
				WithTimeout(5 * time.Second).Should(Equal(1))
			Expect(srv.metrics.Count("handled", "github", "dropped")).To(Equal(1))
			Expect(srv.metrics.Count("dropped", "github", "lease-lost")).To(BeZero())
			Expect(srv.metrics.Count("retry", "github", "unknown")).To(BeZero())
		})

		It("wakes at once when admission notifies, without waiting for the poll", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.PollInterval = time.Hour
			counting := &countingClaims{InboxStore: store}
			srv := startServer(cfg, counting, registry(func(context.Context, ports.Dispatch) error { return nil }))
			Eventually(counting.done.Load).WithTimeout(5 * time.Second).Should(BeNumerically(">=", 1))
			claims := counting.done.Load()

			id := storeRow(ctx, pool, row{Workspace: ws})
			// An absence, so it takes an interval: no claim in a moment that a spinning loop or a
			// short poll would have used (nothing here waits for an effect).
			Consistently(func() string { return stateOf(ctx, pool, id) }).WithTimeout(300 * time.Millisecond).Should(Equal("QUEUED"))
			Expect(counting.done.Load()).To(Equal(claims), "the claim loop waits for its hour-long poll")
			srv.wake.Notify()
			Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(2 * time.Second).Should(Equal("DONE"))
		})
	})

	Describe("Leases of running handlers", func() {
		It("renews the lease while the handler runs past it", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.RenewInterval = 50 * time.Millisecond
			cfg.ReaperInterval = 50 * time.Millisecond
			entered, finish := make(chan struct{}), make(chan struct{})
			srv := startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error {
				close(entered)
				<-finish
				return nil
			}))
			DeferCleanup(func() { close(finish) }) // registered after the server: runs before it stops
			id := storeRow(ctx, pool, row{Workspace: ws})
			Eventually(entered).WithTimeout(5 * time.Second).Should(BeClosed())
			leasedUntil := func() time.Time {
				return support.Scalar[time.Time](ctx, pool, `SELECT leased_until FROM provider_event WHERE id = $1`, id)
			}
			first := leasedUntil()
			// The handler runs twice past its first lease in steps of half a lease; after each step
			// the renewer extends the lease from the moved clock before the reaper (which runs as
			// often) could find it expired.
			for range 4 {
				clock.Advance(cfg.LeaseDuration / 2)
				due := clock.Now().Add(cfg.LeaseDuration * 3 / 4)
				Eventually(leasedUntil).WithTimeout(5 * time.Second).Should(BeTemporally(">", due))
			}
			Expect(clock.Now()).To(BeTemporally(">", first.Add(cfg.LeaseDuration)), "the first lease is long over")
			Expect(stateOf(ctx, pool, id)).To(Equal("LEASED"))
			finish <- struct{}{}
			Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(5 * time.Second).Should(Equal("DONE"))
			r := readRow(ctx, pool, id)
			Expect(r.Attempt).To(Equal(1))
			Expect(r.UnknownFailures).To(BeZero())
			Expect(srv.metrics.Count("dropped", "github", "lease-lost")).To(BeZero())
		})

		It("cancels the handler's context at the handler timeout and counts the attempt", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.HandlerTimeout = 300 * time.Millisecond
			var calls atomic.Int32
			causes := make(chan error, 1)
			startServer(cfg, store, registry(func(ctx context.Context, _ ports.Dispatch) error {
				if calls.Add(1) == 1 {
					<-ctx.Done()
					causes <- ctx.Err()
					return ctx.Err()
				}
				return nil
			}))
			id := storeRow(ctx, pool, row{Workspace: ws})
			Eventually(causes).WithTimeout(5 * time.Second).Should(Receive(MatchError(context.DeadlineExceeded)))
			Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(5 * time.Second).Should(Equal("DONE"))
			r := readRow(ctx, pool, id)
			Expect(r.Attempt).To(Equal(2))
			Expect(r.UnknownFailures).To(Equal(1))
		})

		It("lets its reaper take back a lease nobody renews", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			const lease = 2 * time.Minute
			_, err := store.Claim(ctx, "a-dead-server", 1, lease)
			Expect(err).NotTo(HaveOccurred())
			clock.Advance(lease)
			cfg := specConfig(owner)
			cfg.ReaperInterval = 100 * time.Millisecond
			srv := startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error { return nil }))
			Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(5 * time.Second).Should(Equal("DONE"))
			r := readRow(ctx, pool, id)
			Expect(r.Attempt).To(Equal(2))
			Expect(r.UnknownFailures).To(Equal(1))
			Eventually(func() int { return srv.metrics.Count("retry", "github", "lease-expired") }).Should(Equal(1))
		})
	})

	Describe("Retention", func() {
		// The spec's clock is four days on, past the replay window (3 d): rows that ended now
		// are old enough for retention at once.
		BeforeEach(func() { clock.Advance(4 * 24 * time.Hour) })

		oldDone := func(ctx context.Context, n int) {
			// One transaction, so no running claimer sees the rows QUEUED.
			tx, err := pool.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			for range n {
				id := storeRow(ctx, tx, row{Workspace: ws})
				_, err := tx.Exec(ctx, `UPDATE provider_event SET state = 'DONE', ended_at = now() WHERE id = $1`, id)
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(tx.Commit(ctx)).To(Succeed())
		}

		It("runs on the one server that holds the retention lease, in batches", func(ctx SpecContext) {
			oldDone(ctx, 5)
			cfg := specConfig("server-a")
			cfg.RetentionInterval = 200 * time.Millisecond
			cfg.RetentionBatch = 2
			a := startServer(cfg, store, consumer.NewRegistry())
			Eventually(func() int { return countRows(ctx, pool, "true") }).WithTimeout(5 * time.Second).Should(BeZero())

			cfg.Owner = "server-b"
			b := startServer(cfg, store, consumer.NewRegistry())
			Eventually(func() int { return len(b.log.Find("consumer started")) }).Should(Equal(1))
			for range 3 {
				oldDone(ctx, 3)
				Eventually(func() int { return countRows(ctx, pool, "true") }).WithTimeout(5 * time.Second).Should(BeZero())
			}
			// The run logs after its last batch commits, so the rows can be gone a moment before
			// the line is written: wait for the line, not only for the rows.
			Eventually(func() int { return len(a.log.Find("retention deleted")) }).WithTimeout(5 * time.Second).
				Should(BeNumerically(">=", 4))
			Expect(b.log.Find("retention deleted")).To(BeEmpty(), "server-b never held the lease")
			var holder string
			Expect(pool.QueryRow(ctx, `SELECT holder FROM singleton_lease WHERE name = 'inbox-retention'`).Scan(&holder)).To(Succeed())
			Expect(holder).To(Equal("server-a"))
		})

		It("is given up by a stopping server, so the next server runs it at once rather than when the lease runs out", func(ctx SpecContext) {
			cfg := specConfig("server-a")
			cfg.RetentionInterval = time.Hour // the lease lasts two hours
			a := startServer(cfg, store, consumer.NewRegistry())
			Eventually(func() int {
				return support.Count(ctx, pool, `SELECT count(*) FROM singleton_lease WHERE name = 'inbox-retention' AND holder = 'server-a'`)
			}).WithTimeout(5 * time.Second).Should(Equal(1))
			Expect(a.stop()).To(Succeed())

			oldDone(ctx, 3)
			cfg.Owner = "server-b"
			b := startServer(cfg, store, consumer.NewRegistry())
			Eventually(func() int { return countRows(ctx, pool, "true") }).WithTimeout(10 * time.Second).Should(BeZero())
			Eventually(func() int { return len(b.log.Find("retention deleted")) }).WithTimeout(5 * time.Second).Should(Equal(1))
		})

		It("logs each pass's deleted rows, its batches, its time and its longest batch", func(ctx SpecContext) {
			oldDone(ctx, 5)
			cfg := specConfig(owner)
			cfg.RetentionInterval = time.Hour // one pass, at the start
			cfg.RetentionBatch = 2
			srv := startServer(cfg, store, consumer.NewRegistry())
			Eventually(func() int { return len(srv.log.Find("retention deleted")) }).WithTimeout(5 * time.Second).Should(Equal(1))
			pass := srv.log.Find("retention deleted")[0]
			Expect(pass.Value("deleted")).To(BeEquivalentTo(5))
			Expect(pass.Value("batches")).To(BeEquivalentTo(3), "2 + 2 + 1 rows")
			Expect(pass.Value("ms")).To(BeNumerically(">=", pass.Value("longestBatchMs")))
			Expect(pass.Value("longestBatchMs")).To(BeNumerically(">=", 0))
		})

		It("leaves the rows and counts the failure when deleting fails", func(ctx SpecContext) {
			oldDone(ctx, 2)
			failing := &failingRetention{InboxStore: store}
			cfg := specConfig(owner)
			cfg.RetentionInterval = 100 * time.Millisecond
			srv := startServer(cfg, failing, consumer.NewRegistry())
			Eventually(func() int { return srv.metrics.Count("retention_failures") }).WithTimeout(5 * time.Second).Should(BeNumerically(">=", 2))
			Expect(countRows(ctx, pool, "true")).To(Equal(2))
		})
	})

	It("refreshes the inbox-rows and oldest-queued-age gauges", func(ctx SpecContext) {
		storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
		suspended := newWorkspace(ctx, pool, "paused", "SUSPENDED")
		waiting := storeRow(ctx, pool, row{Workspace: suspended})
		_, err := pool.Exec(ctx, `UPDATE provider_event SET due_at = now() - interval '2 minutes' WHERE id = $1`, waiting)
		Expect(err).NotTo(HaveOccurred())
		srv := startServer(specConfig(owner), store, consumer.NewRegistry())
		Eventually(func() int64 { return srv.metrics.Rows("DONE") }).WithTimeout(5 * time.Second).Should(Equal(int64(1)))
		Eventually(func() int64 { return srv.metrics.Rows("QUEUED") }).Should(Equal(int64(1)))
		Eventually(srv.metrics.OldestQueued).Should(BeNumerically(">=", 2*time.Minute),
			"the suspended workspace's row waits past its due time")
	})

	It("refuses a config without its owner or with renewal outside the lease", func() {
		reg := consumer.NewRegistry()
		_, err := consumer.New(consumer.Config{}, store, reg, consumer.NewSignal(), systemClock{}, &recordingLogger{}, noopMetrics{})
		Expect(err).To(MatchError(ContainSubstring("Owner")))
		_, err = consumer.New(consumer.Config{Owner: "x", LeaseDuration: time.Second, RenewInterval: 2 * time.Second},
			store, reg, consumer.NewSignal(), systemClock{}, &recordingLogger{}, noopMetrics{})
		Expect(err).To(MatchError(ContainSubstring("renew interval")))
		c, err := consumer.New(consumer.Config{Owner: "x"}, store, reg, consumer.NewSignal(), systemClock{}, &recordingLogger{}, noopMetrics{})
		Expect(err).NotTo(HaveOccurred())
		cfg := c.Config()
		Expect(cfg.Claimers).To(Equal(8))
		Expect(cfg.LeaseDuration).To(Equal(2 * time.Minute))
		Expect(cfg.RenewInterval).To(Equal(30 * time.Second))
		Expect(cfg.HandlerTimeout).To(Equal(30 * time.Minute))
		Expect(cfg.ReaperInterval).To(Equal(30 * time.Second))
		Expect(cfg.PollInterval).To(Equal(5 * time.Second))
		Expect(cfg.ReplayWindow).To(Equal(72 * time.Hour))
		Expect(cfg.DeadRetention).To(Equal(30 * 24 * time.Hour))
		Expect(cfg.RetentionInterval).To(Equal(time.Hour))
		Expect(cfg.RetryBaseDelay).To(Equal(2 * time.Second))
		Expect(cfg.RetryMaxDelay).To(Equal(5 * time.Minute))
		Expect(cfg.PoisonMaxAttempts).To(Equal(10))
	})
})
