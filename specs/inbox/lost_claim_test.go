package inbox_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
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
		return nil, pgutil.Interpret("claim", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF))
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
