package deliveryinbox_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("A database conflict inside a step", func() {
	var eventID int64

	BeforeEach(func(ctx SpecContext) {
		eventID = leasedEvent(ctx, 1)
		_, err := otherPool.Exec(ctx, `INSERT INTO spec_item (id) VALUES ('held')`)
		Expect(err).NotTo(HaveOccurred())
	})

	It("is a database-conflict failure (bounded backoff, no budget), even when the mirror store returned the raw error", func(ctx SpecContext) {
		holdLock(ctx, `SELECT id FROM spec_item WHERE id = 'held' FOR UPDATE`)
		var raw error
		ran, err := box.Step(dispatchCtx(ctx, eventID, 1), step, func(ctx context.Context, tx ports.Tx) error {
			ptx, err := sqlkit.PgxTx(tx)
			Expect(err).NotTo(HaveOccurred())
			_, err = ptx.Exec(ctx, `SET LOCAL lock_timeout = '50ms'`)
			Expect(err).NotTo(HaveOccurred())
			_, raw = ptx.Exec(ctx, `UPDATE spec_item SET n = n + 1 WHERE id = 'held'`)
			return raw // as a mirror store would: the pgx error, uninterpreted
		})
		Expect(raw).To(HaveOccurred(), "the lock timeout (SQLSTATE 55P03) ended the statement")
		Expect(ran).To(BeFalse())
		Expect(err).To(MatchError(raw), "the store's own error stays in the chain")
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseDatabaseConflict))
		Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
		Expect(stepRows(ctx, eventID)).To(BeEmpty())
	})
})
