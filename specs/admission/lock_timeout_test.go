package admission_test

import (
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
)

// Admission waits for a connection's lifecycle lock at most the admission lock timeout
// (HEPHAESTUS_ADMISSION_LOCK_TIMEOUT), then answers 503 retry.
var _ = Describe("Admission behind a long lifecycle lock", func() {
	It("gives up at the lock timeout with 503 retry, stores nothing, and admits once the lock is gone", func(ctx SpecContext) {
		cfg, err := pgxpool.ParseConfig(db.URL)
		Expect(err).NotTo(HaveOccurred())
		admissionstore.Configure(cfg)
		admissionstore.SetLockTimeout(cfg, 300*time.Millisecond)
		short, err := pgxpool.NewWithConfig(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(short.Close)
		r := newReceiver(receiverOptions{pool: short})

		acme := createWorkspace(ctx, "acme")
		app := createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		subscribe(ctx, app, "repository", "r1")
		work := hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "r1"}}}

		// A long transaction (a workspace deletion of old, a stuck operator session) holds the
		// connection's row.
		holder := openTx(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, app)

		start := time.Now()
		res := r.deliver("d-1", work)
		Expect(time.Since(start)).To(BeNumerically("<", 3*time.Second))
		Expect(res.status).To(Equal(http.StatusServiceUnavailable), res.raw)
		Expect(res.body).To(Equal(errorBody("retry")))
		Expect(res.retryAfter).To(Equal("5"))
		Expect(rowsOf(ctx, "")).To(BeEmpty())

		Expect(holder.Rollback(ctx)).To(Succeed())
		Expect(r.deliver("d-1", work).body).To(Equal(accepted(1, 0)))
	})

	It("waits at most two seconds by default", func(ctx SpecContext) {
		var timeout string
		Expect(admissionPool.QueryRow(ctx, `SHOW lock_timeout`).Scan(&timeout)).To(Succeed())
		Expect(timeout).To(Equal("2s"))
	})
})
