package inbox_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// losingClaimAnswers is the real store whose first claims commit in the database but lose
// their answer on the way back, as a claim does when the primary dies after its COMMIT reached
// the synchronous standby: the rows are LEASED to the server, which hears only an unexpected EOF.
type losingClaimAnswers struct {
	ports.InboxStore
	lose atomic.Int32 // how many claims that returned rows still lose their answer
	lost atomic.Int64 // rows whose claim answer was lost
}

func (l *losingClaimAnswers) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	claimed, err := l.InboxStore.Claim(ctx, owner, limit, lease)
	if err == nil && len(claimed) > 0 && l.lose.Add(-1) >= 0 {
		l.lost.Add(int64(len(claimed)))
		return nil, sqlkit.Interpret("claim", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF))
	}
	return claimed, err
}

var _ = Describe("A claim whose answer was lost with the database connection", func() {
	It("hands its rows back before the next claim, without spending an attempt or the budget, and they are handled in order", func(ctx SpecContext) {
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		repos := make([]string, 40)
		for i := range repos {
			repos[i] = fmt.Sprintf("r%d", i%8)
		}
		storeRows(ctx, pool, ws, repos, `{}`)

		st := &losingClaimAnswers{InboxStore: store}
		st.lose.Store(2)
		cfg := specConfig(owner)
		// No lease runs out during the spec: only the release can free the lost rows.
		cfg.LeaseDuration = 10 * time.Minute
		cfg.RenewInterval = time.Minute
		cfg.ReaperInterval = time.Minute
		log := newScopeLog()
		srv := startServer(cfg, st, registry(func(_ context.Context, d ports.Dispatch) error {
			log.enter(d)
			log.exit(d, true)
			return nil
		}))

		Eventually(func() int { return countRows(ctx, pool, "state = 'DONE'") }).
			WithTimeout(20 * time.Second).Should(Equal(len(repos)))
		Expect(st.lost.Load()).To(BeNumerically(">", 0), "claims lost their answers")
		Expect(countRows(ctx, pool, "attempt <> 1")).To(BeZero(), "each row was attempted once: the lost claims were given back")
		Expect(countRows(ctx, pool, "unknown_failures <> 0")).To(BeZero(), "no budget was spent")
		expectScopeOrder(ctx, pool, log)
		Expect(srv.log.Find("released leases of a claim whose answer was lost")).NotTo(BeEmpty())
		Expect(srv.metrics.Count("retry", "github", "lease-expired")).To(BeZero())
	})

	It("leaves the leases this server knows it holds, and other servers' leases, alone", func(ctx SpecContext) {
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		storeRows(ctx, pool, ws, []string{"a", "b", "c", "d"}, `{}`)
		mine, err := store.Claim(ctx, owner, 2, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(mine).To(HaveLen(2))
		theirs, err := store.Claim(ctx, "other-server", 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(theirs).To(HaveLen(1))

		n, err := store.ReleaseUnheld(ctx, owner, []int64{mine[0].Delivery.ID()})
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(Equal(1))
		Expect(readRow(ctx, pool, mine[0].Delivery.ID()).State).To(Equal("LEASED"))
		released := readRow(ctx, pool, mine[1].Delivery.ID())
		Expect(released.State).To(Equal("QUEUED"))
		Expect(released.Attempt).To(BeZero(), "the lost claim's attempt is given back")
		Expect(released.UnknownFailures).To(BeZero())
		Expect(readRow(ctx, pool, theirs[0].Delivery.ID()).State).To(Equal("LEASED"))
	})
})

// unreachableOnce is the real store whose next claim fails as a lost connection, as every
// call of a server does while the database host is gone. While paused, its claims succeed
// and find nothing (pausedClaims counts them), so that a spec can lease a row to another
// holder without this server claiming it first.
type unreachableOnce struct {
	ports.InboxStore
	fail         atomic.Bool
	paused       atomic.Bool
	pausedClaims atomic.Int64
}

func (u *unreachableOnce) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	if u.fail.CompareAndSwap(true, false) {
		return nil, sqlkit.Interpret("claim", fmt.Errorf("read: %w", io.ErrUnexpectedEOF))
	}
	if u.paused.Load() {
		u.pausedClaims.Add(1)
		return nil, nil
	}
	return u.InboxStore.Claim(ctx, owner, limit, lease)
}

var _ = Describe("A lease that ran out while the database was unreachable", func() {
	// A lease of a server that could not renew it: claimed by "holder", never renewed.
	leaseOfAnUnreachableHolder := func(ctx context.Context) int64 {
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		id := storeRow(ctx, pool, row{Workspace: ws, Repo: "held"})
		claimed, err := store.Claim(ctx, "holder", 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(Equal([]int64{id}))
		return id
	}
	reaperConfig := func() consumer.Config {
		cfg := specConfig(owner)
		cfg.LeaseDuration = time.Minute
		cfg.RenewInterval = 10 * time.Second
		cfg.ReaperInterval = 100 * time.Millisecond
		return cfg
	}

	It("is taken back as a database transport failure, without spending the budget, by a reaper whose server saw the outage", func(ctx SpecContext) {
		id := leaseOfAnUnreachableHolder(ctx)
		st := &unreachableOnce{InboxStore: store}
		st.fail.Store(true)
		srv := startServer(reaperConfig(), st, registry(func(context.Context, ports.Dispatch) error { return nil }))
		Eventually(func() []logEntry { return srv.log.Find("claiming failed; backing off") }).
			WithTimeout(5 * time.Second).ShouldNot(BeEmpty())

		clock.Advance(time.Minute + time.Second) // the holder's lease ran out during the outage
		Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(10 * time.Second).Should(Equal("DONE"))
		r := readRow(ctx, pool, id)
		Expect(r.UnknownFailures).To(BeZero(), "the outage spent no budget")
		Expect(srv.metrics.Count("retry", "github", "database-transport")).To(Equal(1))
		Expect(srv.metrics.Count("retry", "github", "lease-expired")).To(BeZero())
	})

	It("costs the budget as before for a lease that started after the outage ended", func(ctx SpecContext) {
		st := &unreachableOnce{InboxStore: store}
		st.fail.Store(true)
		srv := startServer(reaperConfig(), st, registry(func(context.Context, ports.Dispatch) error { return nil }))
		Eventually(func() []logEntry { return srv.log.Find("claiming failed; backing off") }).
			WithTimeout(5 * time.Second).ShouldNot(BeEmpty())
		// The outage is over (this server claimed again, successfully) when the holder takes
		// its lease, which then runs out: that expiry is its handler's doing (a handler that
		// stopped its server). The server's claims find nothing until the holder has the row.
		st.paused.Store(true)
		clock.Advance(10 * time.Second)
		Eventually(st.pausedClaims.Load).WithTimeout(5 * time.Second).Should(BeNumerically(">", 0))
		id := leaseOfAnUnreachableHolder(ctx)
		st.paused.Store(false)
		clock.Advance(time.Minute + time.Second)
		Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(10 * time.Second).Should(Equal("DONE"))
		Expect(readRow(ctx, pool, id).UnknownFailures).To(Equal(1))
		Expect(srv.metrics.Count("retry", "github", "lease-expired")).To(Equal(1))
	})

	It("still ends DEAD with LeaseExpired when an event stops every server in turn (no server saw an outage)", func(ctx SpecContext) {
		id := leaseOfAnUnreachableHolder(ctx)
		_, err := pool.Exec(ctx, `UPDATE provider_event SET unknown_failures = 9 WHERE id = $1`, id)
		Expect(err).NotTo(HaveOccurred())
		srv := startServer(reaperConfig(), store, registry(func(context.Context, ports.Dispatch) error { return nil }))
		clock.Advance(time.Minute + time.Second)
		Eventually(func() string { return stateOf(ctx, pool, id) }).WithTimeout(10 * time.Second).Should(Equal("DEAD"))
		r := readRow(ctx, pool, id)
		Expect(r.UnknownFailures).To(Equal(10))
		Expect(r.ErrorClass).To(Equal("LeaseExpired"))
		Expect(srv.log.Find("expired lease made the delivery dead")).NotTo(BeEmpty())
	})
})
