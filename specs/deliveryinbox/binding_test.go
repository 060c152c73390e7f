package deliveryinbox_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The rule "provider fallbacks rethrow a rejected inbox write" is proven on production code:
// the GitLab push commit loop in specs/gitlab/push_test.go.

var _ = Describe("Binding the dispatch identity", func() {
	It("binds the claimed event and its lease epoch for the handler call only", func(ctx SpecContext) {
		hctx := dispatchCtx(ctx, 42, 7)
		f, ok := dispatch.DispatchFrom(hctx)
		Expect(ok).To(BeTrue())
		Expect(f.EventID()).To(Equal(int64(42)))
		Expect(f.Epoch()).To(Equal(inbox.Epoch(7)))

		_, ok = dispatch.DispatchFrom(dispatch.Detach(hctx))
		Expect(ok).To(BeFalse())
		_, ok = dispatch.DispatchFrom(ctx)
		Expect(ok).To(BeFalse())
	})

	It("refuses a delivery without a lease rather than letting its writes run unfenced", func(ctx SpecContext) {
		unclaimed := ports.Claimed{Delivery: inbox.RestoreDelivery(inbox.Stored{ID: 42, State: inbox.Queued})}
		Expect(func() { dispatch.BindDispatch(ctx, unclaimed) }).To(PanicWith(ContainSubstring("not claimed")))
	})
})
