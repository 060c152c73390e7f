package deliveryinbox_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// firstAvailable is the shape of a provider fallback: try each source in turn, log a failure
// and go on to the next one.
//
// The rule it shows: a rejected inbox write (inbox.IsFenceRejection: lease lost, event erased,
// required row busy) is returned unchanged before anything is logged or another source tried.
// The fence has already decided that this attempt may not write; a fallback that swallowed the
// rejection would let the handler report success, so the consumer would complete a delivery
// whose writes never committed (busy), or log noise for work it must drop (lease lost, erased).
// Only the consumer may decide, through inbox.Classify, what happens to the delivery.
func firstAvailable(ctx context.Context, logFailure func(error), sources ...func(context.Context) error) error {
	var last error
	for _, source := range sources {
		err := source(ctx)
		if err == nil {
			return nil
		}
		if inbox.IsFenceRejection(err) {
			return err
		}
		logFailure(err)
		last = err
	}
	return last
}

var _ = Describe("A provider fallback", func() {
	var (
		eventID   int64
		logged    []error
		cacheUsed bool
	)

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
		logged, cacheUsed = nil, false
	})

	// fetchAndStore is source A: the provider read succeeded, its result is written through the
	// inbox. cache is source B: it answers from elsewhere and writes nothing.
	fetchAndStore := func(ctx context.Context) error {
		return box.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
			return writeItem(ctx, tx, "from-provider")
		})
	}
	cache := func(context.Context) error { cacheUsed = true; return nil }
	logFailure := func(err error) { logged = append(logged, err) }

	DescribeTable("returns a rejected inbox write instead of trying another source",
		func(ctx SpecContext, reject func(context.Context), want error, class inbox.FailureClass) {
			reject(ctx)
			hctx, cancel := context.WithTimeout(dispatchCtx(ctx, eventID, 1), quick)
			defer cancel()
			err := firstAvailable(hctx, logFailure, fetchAndStore, cache)
			Expect(err).To(MatchError(want))
			Expect(inbox.Classify(err)).To(Equal(class))
			Expect(cacheUsed).To(BeFalse())
			Expect(logged).To(BeEmpty())
			Expect(items(ctx)).To(BeEmpty())
		},
		Entry("lease lost", func(ctx context.Context) { nextClaim(ctx, eventID) },
			inbox.ErrLeaseLost, inbox.LeaseLost),
		Entry("erased", func(ctx context.Context) {
			_, err := otherPool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, eventID)
			Expect(err).NotTo(HaveOccurred())
		}, inbox.ErrErased, inbox.Erased),
		Entry("busy", func(ctx context.Context) {
			_, err := otherPool.Exec(ctx, `UPDATE inbox_erasure_fence SET in_progress = true`)
			Expect(err).NotTo(HaveOccurred())
		}, inbox.ErrBusy, inbox.Contention),
	)

	It("still logs and falls back on an ordinary source failure", func(ctx SpecContext) {
		unavailable := errors.New("provider answered 502")
		err := firstAvailable(dispatchCtx(ctx, eventID, 1), logFailure,
			func(context.Context) error { return unavailable }, cache)
		Expect(err).NotTo(HaveOccurred())
		Expect(cacheUsed).To(BeTrue())
		Expect(logged).To(ConsistOf(MatchError(unavailable)))
	})
})

var _ = Describe("Binding the dispatch identity", func() {
	It("binds the claimed event and its lease epoch for the handler call only", func(ctx SpecContext) {
		hctx := dispatchCtx(ctx, 42, 7)
		f, ok := ports.DispatchFrom(hctx)
		Expect(ok).To(BeTrue())
		Expect(f.EventID()).To(Equal(int64(42)))
		Expect(f.Epoch()).To(Equal(inbox.Epoch(7)))

		_, ok = ports.DispatchFrom(ports.Detach(hctx))
		Expect(ok).To(BeFalse())
		_, ok = ports.DispatchFrom(ctx)
		Expect(ok).To(BeFalse())
	})

	It("refuses a delivery without a lease rather than letting its writes run unfenced", func(ctx SpecContext) {
		unclaimed := ports.Claimed{Delivery: inbox.RestoreDelivery(inbox.Stored{ID: 42, State: inbox.Queued})}
		Expect(func() { dispatch.BindDispatch(ctx, unclaimed) }).To(PanicWith(ContainSubstring("not claimed")))
	})
})
