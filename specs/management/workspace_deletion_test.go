package management_test

import (
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Deleting a workspace must not hold the locks admission needs (its connections' rows) while
// it deletes a large inbox: it suspends the connections first and commits, then deletes the
// inbox in batches, then the workspace.
var _ = Describe("Deleting a workspace with a large inbox", func() {
	It("commits the connections' suspension first and deletes the inbox in batches without locking a connection", func(ctx SpecContext) {
		acme := createWorkspace("acme")
		conn := gitlabConnection("acme")
		// More rows than one batch, the row with the highest id among them.
		_, err := pool.Exec(ctx, `
			INSERT INTO provider_event (workspace_id, connection_id, provider, event_type, delivery_key, scope_key, subject, payload)
			SELECT $1, $2, 'GITLAB', 'Issue Hook', 'bulk-' || g, 'scope-' || g, 'subject', '{}'
			FROM generate_series(1, $3::int) g`, acme, conn, 2*managementstore.DeleteInboxBatch+10)
		Expect(err).NotTo(HaveOccurred())
		last := insertEvent(ctx, &acme, conn, "last")

		// A handler's write holds the last row: the deletion's last batch waits for it, so the
		// spec can look at the deletion in the middle.
		holder, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = holder.Rollback(ctx) })
		_, err = holder.Exec(ctx, `SELECT 1 FROM provider_event WHERE id = $1 FOR UPDATE`, last)
		Expect(err).NotTo(HaveOccurred())

		done := make(chan response, 1)
		go func() {
			defer GinkgoRecover()
			done <- call(http.MethodDelete, "/api/admin/workspaces/acme", adminToken, nil)
		}()

		// Committed, seen from another session: the workspace and its connection are suspended,
		// and whole batches of the inbox are gone already.
		Eventually(func() int {
			return count(ctx, `SELECT count(*) FROM provider_event WHERE workspace_id = $1`, acme)
		}).WithTimeout(10 * time.Second).Should(BeNumerically("<=", 11))
		Expect(count(ctx, `SELECT count(*) FROM connection WHERE id = $1 AND state = 'SUSPENDED'`, conn)).To(Equal(1))
		Expect(count(ctx, `SELECT count(*) FROM workspace WHERE id = $1 AND state = 'SUSPENDED'`, acme)).To(Equal(1))
		// While it waits, the connection's row is free for admission's lifecycle lock.
		Expect(pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR SHARE NOWAIT`, conn)
			return err
		})).To(Succeed())
		// And the deletion waits for the held inbox row's lock, as pg_stat_activity shows.
		support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, holder), 1)
		Expect(done).NotTo(Receive())

		Expect(holder.Rollback(ctx)).To(Succeed())
		var r response
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&r))
		Expect(r.Status).To(Equal(http.StatusNoContent), r.Raw)
		Expect(count(ctx, `SELECT count(*) FROM workspace WHERE id = $1`, acme)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM connection WHERE id = $1`, conn)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM provider_event WHERE workspace_id = $1`, acme)).To(BeZero())
	})
})
