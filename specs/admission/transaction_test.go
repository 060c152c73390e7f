package admission_test

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The admission store runs each admission as an implicit transaction: a pipeline of prepared
// statements that the Sync after the insert commits. These specs pin down what that must
// never change: the isolation the lifecycle lock relies on, and that every transaction ends,
// whether it stored, refused or was cancelled, so no lifecycle lock outlives its delivery.
var _ = Describe("The admission transaction", func() {
	var (
		app  int64
		repo = hubResource{Type: "repository", ID: "1296269"}
		work = hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{repo}}
	)

	BeforeEach(func(ctx SpecContext) {
		acme := createWorkspace(ctx, "acme")
		app = createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		subscribe(ctx, app, "repository", repo.ID)
	})

	// suspendWithin suspends app as the management API does, giving up when the lifecycle
	// lock is not free within wait.
	suspendWithin := func(ctx context.Context, wait time.Duration) error {
		return pgx.BeginFunc(ctx, observer, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, wait.String()); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, app); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, app)
			return err
		})
	}

	It("is refused a pool that admissionstore.Configure did not prepare", func(ctx SpecContext) {
		plain, err := db.Pool(ctx, 2)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(plain.Close)

		_, err = admissionstore.New(plain)

		Expect(err).To(MatchError(ContainSubstring("admissionstore.Configure")))
	})

	It("ends the transaction of a delivery it drops, keeping its session and freeing the lifecycle lock at once", func(ctx SpecContext) {
		single := singleConnectionPool(ctx)
		r := newReceiver(receiverOptions{pool: single})
		unsubscribed := hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "9"}}}

		// The routes statement locked app (the source) before admission dropped the delivery.
		Expect(r.deliver("d-1", unsubscribed).body).To(Equal(dropped("no-subscriber")))
		Expect(r.deliver("d-2", work).status).To(Equal(202))
		Expect(r.deliver("d-3", unsubscribed).body).To(Equal(dropped("no-subscriber")))

		Expect(rowsOf(ctx, "d-2")).To(HaveLen(1))
		Expect(single.Stat().NewConnsCount()).To(BeEquivalentTo(1), "a session left inside its transaction is destroyed, not reused")
		Expect(suspendWithin(ctx, time.Second)).To(Succeed())
		Expect(idleAdmissionSessions(ctx)).To(BeTrue())
	})

	It("commits the insert with its Sync, and the session serves the next delivery", func(ctx SpecContext) {
		single := singleConnectionPool(ctx)
		r := newReceiver(receiverOptions{pool: single})

		for i, key := range []string{"d-1", "d-2", "d-1"} {
			Expect(r.deliver(key, work).status).To(Equal(202), "delivery %d", i)
		}

		Expect(rowsOf(ctx, "")).To(HaveLen(2))
		Expect(single.Stat().NewConnsCount()).To(BeEquivalentTo(1))
		Expect(suspendWithin(ctx, time.Second)).To(Succeed())
		Expect(idleAdmissionSessions(ctx)).To(BeTrue())
	})

	It("rolls back and frees the lifecycle lock when its request is cancelled mid-transaction", func(ctx SpecContext) {
		store, err := admissionstore.New(admissionPool)
		Expect(err).NotTo(HaveOccurred())
		reqCtx, cancel := context.WithCancel(ctx)
		defer cancel()

		err = store.Admit(reqCtx, func(ctx context.Context, tx ports.AdmissionTx) error {
			routes, err := tx.Routes(ctx, ports.RouteSpec{SourceKind: kindHubApp.String(), SourceKey: "1001",
				Resources: []ports.Resource{{Type: "repository", ID: repo.ID}}, RecipientsAnyConnection: true},
				testHub.String(), 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(routes).NotTo(BeEmpty()) // app is locked now
			cancel()
			return ctx.Err()
		})

		Expect(errors.Is(err, context.Canceled)).To(BeTrue())
		Expect(suspendWithin(ctx, 5*time.Second)).To(Succeed())
		Expect(rowsOf(ctx, "")).To(BeEmpty())
	})

	When("the database defaults to SERIALIZABLE", func() {
		BeforeEach(func(ctx SpecContext) {
			var name string
			Expect(pool.QueryRow(ctx, `SELECT current_database()`).Scan(&name)).To(Succeed())
			_, err := pool.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` SET default_transaction_isolation = 'serializable'`)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx context.Context) {
				_, err := pool.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` RESET default_transaction_isolation`)
				Expect(err).NotTo(HaveOccurred())
			})
		})

		It("still reads under READ COMMITTED: a suspension it waited for is seen and refuses the delivery", func(ctx SpecContext) {
			fresh, err := admissionstore.OpenPool(ctx, db.URL) // new sessions, under the new default
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(fresh.Close)
			var isolation string
			Expect(fresh.QueryRow(ctx, `SHOW transaction_isolation`).Scan(&isolation)).To(Succeed())
			Expect(isolation).To(Equal("read committed"))
			r := newReceiver(receiverOptions{pool: fresh})

			tx := openTx(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, app)
			answer := make(chan response, 1)
			go func() {
				defer GinkgoRecover()
				answer <- r.deliver("d-1", work)
			}()
			Eventually(func() (int, error) {
				var n int
				err := observer.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
				return n, err
			}).WithTimeout(10 * time.Second).WithPolling(5 * time.Millisecond).Should(BeNumerically(">=", 1))
			Expect(tx.Commit(ctx)).To(Succeed())

			var res response
			Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
			Expect(res.body).To(Equal(dropped("source-inactive")))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
		})
	})
})

// A store remembers the routes it read and admits the next delivery of the same route in one
// round trip, storing only when that round trip got every lock at once and no connection or
// subscription changed since. These specs warm the memory with one delivery, change what the
// routes depend on, and require the answer a fresh read of the routes gives.
var _ = Describe("Admission from remembered routes", func() {
	var (
		r          *receiver
		acme, beta int64
		app, pat   int64
		repo       = hubResource{Type: "repository", ID: "1296269"}
		work       = hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{repo}}
	)

	BeforeEach(func(ctx SpecContext) {
		r = newReceiver(receiverOptions{})
		acme, beta = createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta")
		app = createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		subscribe(ctx, app, "repository", repo.ID)
		Expect(r.deliver("warm-up", work).status).To(Equal(202)) // remembers the route
	})

	recalls := func() (uint64, uint64) { return r.store.Recalls() }

	It("stores the next delivery of an unchanged route in one round trip", func(ctx SpecContext) {
		Expect(r.deliver("d-1", work).status).To(Equal(202))
		Expect(r.deliver("d-2", work).status).To(Equal(202))

		confirmed, missed := recalls()
		Expect(confirmed).To(BeEquivalentTo(2))
		Expect(missed).To(BeZero())
		Expect(rowsOf(ctx, "d-1")).To(HaveLen(1))
		Expect(rowsOf(ctx, "d-2")).To(HaveLen(1))
	})

	It("stores for a workspace that subscribed since the route was remembered", func(ctx SpecContext) {
		pat = createConnection(ctx, conn{Workspace: beta, Kind: kindHubPAT})
		subscribe(ctx, pat, "repository", repo.ID)

		Expect(r.deliver("d-1", work).status).To(Equal(202))

		Expect(workspacesOf(rowsOf(ctx, "d-1"))).To(ConsistOf(acme, beta))
		_, missed := recalls()
		Expect(missed).To(BeEquivalentTo(1))
	})

	It("refuses the delivery once a suspension committed after the route was remembered", func(ctx SpecContext) {
		_, err := observer.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, app)
		Expect(err).NotTo(HaveOccurred())

		Expect(r.deliver("d-1", work).body).To(Equal(dropped("source-inactive")))

		Expect(rowsOf(ctx, "d-1")).To(BeEmpty())
		_, missed := recalls()
		Expect(missed).To(BeEquivalentTo(1))
	})

	It("waits for a suspension that holds the lifecycle lock, then refuses, rather than admitting", func(ctx SpecContext) {
		tx := openTx(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, app)
		res := answerBehind(ctx, tx, func() response { return r.deliver("d-1", work) })
		Expect(res.body).To(Equal(dropped("source-inactive")))
		Expect(rowsOf(ctx, "d-1")).To(BeEmpty())
	})

	It("answers 503 for a reconfiguration that commits while it waits for the lock", func(ctx SpecContext) {
		tx := openTx(ctx, `UPDATE connection SET config_version = config_version + 1 WHERE id = $1`, app)
		res := answerBehind(ctx, tx, func() response { return r.deliver("d-1", work) })
		Expect(res.status).To(Equal(503))
		Expect(rowsOf(ctx, "d-1")).To(BeEmpty())
	})

	It("stores nothing for a workspace deleted since the route was remembered", func(ctx SpecContext) {
		_, err := observer.Exec(ctx, `DELETE FROM workspace WHERE id = $1`, acme) // cascades to app
		Expect(err).NotTo(HaveOccurred())

		Expect(r.deliver("d-1", work).body).To(Equal(dropped("no-source")))

		Expect(rowsOf(ctx, "d-1")).To(BeEmpty())
		_, missed := recalls()
		Expect(missed).To(BeEquivalentTo(1))
	})

	It("answers a redelivery as a duplicate", func(ctx SpecContext) {
		res := r.deliver("warm-up", work)

		Expect(res.status).To(Equal(202))
		Expect(res.body).To(Equal(accepted(0, 1)))
		Expect(rowsOf(ctx, "warm-up")).To(HaveLen(1))
	})
})

// singleConnectionPool is an admission pool of one connection, so consecutive deliveries
// share one session.
func singleConnectionPool(ctx context.Context) *pgxpool.Pool {
	GinkgoHelper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	Expect(err).NotTo(HaveOccurred())
	admissionstore.Configure(cfg)
	cfg.MaxConns = 1
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Close)
	return p
}

// idleAdmissionSessions reports whether no session of the suite's database other than the
// observer's is inside a transaction: an admission that ended left its session idle.
func idleAdmissionSessions(ctx context.Context) (bool, error) {
	var open int
	err := observer.QueryRow(ctx, `
		SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()
		  AND backend_xid IS NOT NULL`).Scan(&open)
	return open == 0, err
}

// answerBehind sends a delivery in the background, waits until it waits for tx's locks (no
// answer yet), commits tx, and returns the answer that follows.
func answerBehind(ctx context.Context, tx pgx.Tx, deliver func() response) response {
	GinkgoHelper()
	answer := make(chan response, 1)
	go func() {
		defer GinkgoRecover()
		answer <- deliver()
	}()
	support.EventuallyBlockedBy(ctx, observer, support.BackendPID(ctx, tx), 1)
	Expect(answer).NotTo(Receive())
	Expect(tx.Commit(ctx)).To(Succeed())
	var res response
	Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
	return res
}
