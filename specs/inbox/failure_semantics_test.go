package inbox_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// fencedConfig is the spec config with the dispatch identity bound as the server binds it, so
// the handler's steps are fenced by the row's lease.
func fencedConfig(owner string) consumer.Config {
	cfg := specConfig(owner)
	cfg.DispatchContext = dispatch.BindDispatch
	return cfg
}

// steps lists the committed step names of an event.
func steps(ctx context.Context, id int64) []string {
	return support.Column(ctx, pool, `SELECT step_name FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, id)
}

// hold opens a transaction on its own connection that takes lockSQL's lock until release.
func hold(ctx context.Context, lockSQL string, args ...any) (release func()) {
	tx, err := pool.Begin(ctx)
	Expect(err).NotTo(HaveOccurred())
	rows, err := tx.Query(ctx, lockSQL, args...)
	Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }) }
	DeferCleanup(release)
	return release
}

var _ = Describe("A handler that swallows a rejected inbox write", func() {
	var (
		ws     int64
		box    *deliveryinbox.Inbox
		first  = inbox.MustStep("spec.first")
		second = inbox.MustStep("spec.second")
	)

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
		var err error
		box, err = deliveryinbox.New(pool)
		Expect(err).NotTo(HaveOccurred())
	})

	noop := func(context.Context, ports.Tx) error { return nil }

	When("the rejection is ErrBusy", func() {
		It("is retried and completes its unfinished step on the next attempt", func(ctx SpecContext) {
			var calls atomic.Int32
			ranFirst := make([]bool, 3)
			srv := startServer(fencedConfig(owner), store, registry(func(hctx context.Context, d ports.Dispatch) error {
				n := calls.Add(1)
				ran, err := box.Step(hctx, first, noop)
				if err != nil {
					return err
				}
				if n <= 2 {
					ranFirst[n] = ran
				}
				if n == 1 {
					// A workspace operation holds the workspace row: the next write is busy.
					release := hold(ctx, `SELECT id FROM workspace WHERE id = $1 FOR UPDATE`, ws)
					defer release()
				}
				if _, err := box.Step(hctx, second, noop); err != nil {
					Expect(err).To(MatchError(inbox.ErrBusy))
					return nil // swallowed: the bug the consumer must not turn into DONE
				}
				return nil
			}))
			id := storeRow(ctx, pool, row{Workspace: ws})

			Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(10 * time.Second).Should(Equal("DONE"))
			Expect(steps(ctx, id)).To(Equal([]string{first.String(), second.String()}), "the unfinished step committed on the retry")
			Expect(calls.Load()).To(Equal(int32(2)))
			Expect(ranFirst[1]).To(BeTrue())
			Expect(ranFirst[2]).To(BeFalse(), "the retry skipped the committed step")
			Expect(readRow(ctx, pool, id).UnknownFailures).To(BeZero(), "contention uses no budget")
			Eventually(func() int { return srv.metrics.Count("retry", "github", inbox.CauseContention.String()) }).Should(Equal(1))
			Expect(srv.metrics.Count("handled", "github", "done")).To(Equal(1))
		})
	})

	When("the rejection is an erasure of the event", func() {
		It("is dropped as erased-during-processing, not counted as done", func(ctx SpecContext) {
			var calls atomic.Int32
			srv := startServer(fencedConfig(owner), store, registry(func(hctx context.Context, d ports.Dispatch) error {
				calls.Add(1)
				if _, err := box.Step(hctx, first, noop); err != nil {
					return err
				}
				_, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, d.Delivery.ID()) // person erasure
				Expect(err).NotTo(HaveOccurred())
				if _, err := box.Step(hctx, second, noop); err != nil {
					Expect(err).To(MatchError(inbox.ErrErased))
					return nil
				}
				return nil
			}))
			id := storeRow(ctx, pool, row{Workspace: ws})

			Eventually(func() int { return srv.metrics.Count("dropped", "github", inbox.DropErasedDuringProcessing) }).
				WithTimeout(10 * time.Second).Should(Equal(1))
			Expect(srv.metrics.Count("handled", "github", "dropped")).To(Equal(1))
			Expect(srv.metrics.Count("handled", "github", "done")).To(BeZero())
			Expect(stateOf(ctx, pool, id)).To(Equal("missing"))
			Expect(calls.Load()).To(Equal(int32(1)))
		})
	})

	When("the rejection is a lost lease", func() {
		It("records lease-lost when the handler returns, writes no outcome and leaves the row to the newer lease", func(ctx SpecContext) {
			srv := startServer(fencedConfig(owner), store, registry(func(hctx context.Context, d ports.Dispatch) error {
				// The reaper and another claimer took the row over.
				_, err := pool.Exec(ctx, `UPDATE provider_event SET lease_epoch = lease_epoch + 1 WHERE id = $1`, d.Delivery.ID())
				Expect(err).NotTo(HaveOccurred())
				if _, err := box.Step(hctx, first, noop); err != nil {
					Expect(err).To(MatchError(inbox.ErrLeaseLost))
					return nil
				}
				return nil
			}))
			id := storeRow(ctx, pool, row{Workspace: ws})

			Eventually(func() int { return srv.metrics.Count("dropped", "github", inbox.DropLeaseLost) }).
				WithTimeout(10 * time.Second).Should(Equal(1))
			Expect(srv.log.Find("delivery dropped")).To(HaveLen(1), "judged when the handler returned")
			Expect(srv.log.Find("outcome not written")).To(BeEmpty(), "no DONE was sent to the store")
			Expect(srv.metrics.Count("handled", "github", "done")).To(BeZero())
			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("LEASED"), "the newer lease still owns the row")
			Expect(steps(ctx, id)).To(BeEmpty())
		})
	})
})

var _ = Describe("Person erasure holding the copy fence while claimers run", func() {
	It("costs each row a bounded number of attempts, and every row completes once the fence is lowered", func(ctx SpecContext) {
		const (
			servers = 2
			rows    = 40
			scopes  = 20
			held    = 3 * time.Second
		)
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		repos := make([]string, rows)
		for i := range repos {
			repos[i] = fmt.Sprintf("%d", i%scopes)
		}
		storeRows(ctx, pool, ws, repos, `{"action":"opened"}`)

		var (
			mu    sync.Mutex
			calls = map[int64]int{}
		)
		// attempts reports how many rows a handler ran for and the most runs of one row.
		attempts := func() (rowsRun, most int) {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range calls {
				most = max(most, n)
			}
			return len(calls), most
		}

		// Erasure's pass holds the fence row FOR UPDATE: every step that starts now is busy.
		fence := hold(ctx, `SELECT name FROM inbox_erasure_fence WHERE name = 'inbox' FOR UPDATE`)
		raised := time.Now()

		box, err := deliveryinbox.New(pool)
		Expect(err).NotTo(HaveOccurred())
		handler := func(hctx context.Context, d ports.Dispatch) error {
			mu.Lock()
			calls[d.Delivery.ID()]++
			mu.Unlock()
			_, err := box.Step(hctx, inbox.MustStep("spec.write"), func(context.Context, ports.Tx) error { return nil })
			return err
		}
		var started []*server
		for i := range servers {
			p, err := db.Pool(ctx, 8)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			st, err := inboxstore.New(p, inboxstore.Config{})
			Expect(err).NotTo(HaveOccurred())
			cfg := fencedConfig(fmt.Sprintf("server-%d", i))
			cfg.PollInterval = time.Second // claims must come from the retries' own due times
			started = append(started, startServer(cfg, st, registry(handler)))
		}

		// Hold the fence for a few seconds, and until the head of every scope met it: only heads
		// are claimed while their scope's head is retried.
		Eventually(func() bool {
			rowsRun, _ := attempts()
			return time.Since(raised) >= held && rowsRun == scopes
		}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
		Expect(countRows(ctx, pool, "state = 'DONE'")).To(BeZero(), "nothing passed the fence")
		fence()

		Eventually(func() int { return countRows(ctx, pool, "state = 'DONE'") }).
			WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal(rows))
		_, most := attempts()
		GinkgoWriter.Printf("fence held %s; most attempts of one row: %d\n", time.Since(raised).Round(time.Millisecond), most)
		Expect(most).To(BeNumerically(">=", 3), "the heads met the fence repeatedly")
		Expect(most).To(BeNumerically("<=", 40), "a bounded number of attempts per row, not a spin")
		Expect(countRows(ctx, pool, "unknown_failures > 0")).To(BeZero(), "contention uses no budget")
		contention := 0
		for _, s := range started {
			contention += s.metrics.Count("retry", "github", inbox.CauseContention.String())
		}
		Expect(contention).To(BeNumerically(">", 0))
		Expect(contention).To(BeNumerically("<=", rows*40))
	})
})
