package inbox_test

import (
	"context"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// renewalLog is the real store whose Renew calls are recorded, one list of ids per statement,
// and whose outcome write for one row waits until the spec opens a gate.
type renewalLog struct {
	ports.InboxStore
	mu       sync.Mutex
	calls    [][]int64
	held     int64
	gate     chan struct{}
	gateOnce sync.Once
}

func (r *renewalLog) Renew(ctx context.Context, acks []ports.Ack, lease time.Duration) ([]bool, error) {
	ids := make([]int64, len(acks))
	for i, a := range acks {
		ids[i] = a.ID
	}
	slices.Sort(ids)
	r.mu.Lock()
	r.calls = append(r.calls, ids)
	r.mu.Unlock()
	return r.InboxStore.Renew(ctx, acks, lease)
}

func (r *renewalLog) Record(ctx context.Context, results []ports.Result) ([]ports.RecordStatus, error) {
	if slices.ContainsFunc(results, func(res ports.Result) bool { return res.Ack.ID == r.held }) {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.InboxStore.Record(ctx, results)
}

func (r *renewalLog) open() { r.gateOnce.Do(func() { close(r.gate) }) }

// mark is the number of renewal statements so far; since lists the ids of those after mark.
func (r *renewalLog) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *renewalLog) since(mark int) [][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls[mark:])
}

var _ = Describe("Lease renewal limits", func() {
	// Two rows of two scopes. slow's handler ignores its cancelled context and runs on past the
	// handler timeout; quick's handler returns at once, but its outcome write waits at the gate.
	// The renewer (the consumer's own loop) must stop renewing slow at the handler timeout, so a
	// handler that never returns lets its lease expire for the reaper, and must go on renewing
	// quick until its outcome is recorded, however long that takes.
	It("stops at the handler timeout and goes on until the outcome is recorded", func(ctx SpecContext) {
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		slow := storeRow(ctx, pool, row{Workspace: ws, Repo: "slow"})
		quick := storeRow(ctx, pool, row{Workspace: ws, Repo: "quick"})
		log := &renewalLog{InboxStore: store, held: quick, gate: make(chan struct{})}

		cfg := specConfig(owner)
		cfg.RenewInterval = 20 * time.Millisecond
		// Long enough that renewals come while both handlers are known to run, however loaded
		// the machine: the first expectation below waits for one.
		cfg.HandlerTimeout = 2 * time.Second
		timedOut, finish := make(chan struct{}), make(chan struct{})
		srv := startServer(cfg, log, registry(func(ctx context.Context, d ports.Dispatch) error {
			if d.Delivery.ID() == slow {
				<-ctx.Done()
				close(timedOut)
				<-finish // runs on, ignoring the cancellation
			}
			return nil
		}))
		DeferCleanup(func() { close(finish); log.open() }) // runs before the server stops

		// While both handlers run or wait for their outcome, each renewal names both.
		Eventually(func() [][]int64 { return log.since(0) }).WithTimeout(5 * time.Second).
			Should(ContainElement([]int64{slow, quick}))

		Eventually(timedOut).WithTimeout(5 * time.Second).Should(BeClosed())
		// The first renewal after this point may have listed its leases just before it; every
		// later one listed them after the handler timeout had passed.
		mark := log.mark()
		Eventually(func() int { return len(log.since(mark)) }).WithTimeout(5 * time.Second).Should(BeNumerically(">=", 4))
		for _, ids := range log.since(mark)[1:] {
			Expect(ids).To(Equal([]int64{quick}),
				"after the handler timeout only the lease whose handler returned is renewed")
		}
		Expect(stateOf(ctx, pool, quick)).To(Equal("LEASED"), "its outcome is not recorded yet")

		log.open()
		Eventually(func() string { return stateOf(ctx, pool, quick) }).WithTimeout(5 * time.Second).Should(Equal("DONE"))
		Expect(srv.metrics.Count("dropped", "github", "lease-lost")).To(BeZero())
	})
})
