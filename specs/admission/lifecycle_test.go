package admission_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Admission under the connection's lifecycle lock", func() {
	var (
		r          *receiver
		acme, beta int64
		app, pat   int64
		repo       = hubResource{Type: "repository", ID: "1296269"}
		work       = hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{repo}}
	)

	// setUp builds the receiver with opts and two workspaces: acme's App source and beta's PAT
	// both subscribe to repo.
	setUp := func(ctx context.Context, opts receiverOptions) {
		r = newReceiver(opts)
		acme, beta = createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta")
		app = createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		pat = createConnection(ctx, conn{Workspace: beta, Kind: kindHubPAT})
		subscribe(ctx, app, "repository", repo.ID)
		subscribe(ctx, pat, "repository", repo.ID)
	}

	// deliverAsync posts in the background; the channel yields the answer.
	deliverAsync := func(key string) <-chan response {
		out := make(chan response, 1)
		go func() {
			defer GinkgoRecover()
			out <- r.deliver(key, work)
		}()
		return out
	}

	// holdLifecycleLock takes app's lifecycle lock as a suspension or reconfiguration does and
	// applies change in the same, still open, transaction.
	holdLifecycleLock := func(ctx context.Context, connectionID int64, change string) pgx.Tx {
		GinkgoHelper()
		tx := openTx(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, connectionID)
		_, err := tx.Exec(ctx, `UPDATE connection SET `+change+` WHERE id = $1`, connectionID)
		Expect(err).NotTo(HaveOccurred())
		return tx
	}

	// eventuallyWaitingOnLock waits until one session of the database waits for the row lock tx
	// holds.
	eventuallyWaitingOnLock := func(ctx context.Context, tx pgx.Tx) {
		GinkgoHelper()
		support.EventuallyBlockedBy(ctx, observer, support.BackendPID(ctx, tx), 1)
	}

	When("a reconfiguration commits while admission waits for the lock", func() {
		BeforeEach(func(ctx SpecContext) { setUp(ctx, receiverOptions{}) })

		It("fails with 503 and Retry-After, stores nothing, and the retry follows the current route", func(ctx SpecContext) {
			tx := holdLifecycleLock(ctx, app, `config_version = config_version + 1`)
			answer := deliverAsync("d-1")
			eventuallyWaitingOnLock(ctx, tx)
			Expect(tx.Commit(ctx)).To(Succeed())

			var res response
			Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
			Expect(res.status).To(Equal(http.StatusServiceUnavailable))
			Expect(res.body).To(Equal(errorBody("retry")))
			Expect(res.retryAfter).NotTo(BeEmpty())
			Expect(rowsOf(ctx, "")).To(BeEmpty())
			Expect(r.metrics.Rejections("testhub", "route-changed")).To(Equal(1))

			Expect(r.deliver("d-1", work).body).To(Equal(accepted(2, 0)))
		})
	})

	When("a suspension holds the lock first", func() {
		BeforeEach(func(ctx SpecContext) { setUp(ctx, receiverOptions{}) })

		It("waits for the suspension to commit and then refuses the delivery", func(ctx SpecContext) {
			tx := holdLifecycleLock(ctx, app, `state = 'SUSPENDED'`)
			answer := deliverAsync("d-1")
			eventuallyWaitingOnLock(ctx, tx)
			Expect(answer).NotTo(Receive(), "the delivery waits for the suspension")
			Expect(tx.Commit(ctx)).To(Succeed())

			var res response
			Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
			Expect(res.body).To(Equal(dropped("source-inactive")))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
		})
	})

	When("an admission holds the lock first", func() {
		var gate *lockGate

		BeforeEach(func(ctx SpecContext) {
			gate = &lockGate{locked: make(chan struct{}), release: make(chan struct{})}
			setUp(ctx, receiverOptions{wrapStore: gate.wrap})
			DeferCleanup(gate.open) // runs before the server closes, so a failed spec cannot hang it
		})

		It("makes the suspension wait until the inbox insert commits, having read ACTIVE", func(ctx SpecContext) {
			answer := deliverAsync("d-1")
			Eventually(gate.locked).WithTimeout(10 * time.Second).Should(BeClosed())

			suspended := make(chan error, 1)
			go func() {
				defer GinkgoRecover()
				suspended <- pgx.BeginFunc(ctx, observer, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, app)
					return err
				})
			}()
			// The suspension waits for a lock of the admission's open transaction.
			Eventually(func() (int, error) {
				var n int
				err := observer.QueryRow(ctx, `
					SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'
					  AND query LIKE 'UPDATE connection SET state%'`).Scan(&n)
				return n, err
			}).WithTimeout(10 * time.Second).WithPolling(5 * time.Millisecond).Should(Equal(1))
			Expect(suspended).NotTo(Receive())
			gate.open()

			var res response
			Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
			Expect(res.body).To(Equal(accepted(2, 0)))
			Eventually(suspended).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
			Expect(rowsOf(ctx, "d-1")).To(HaveLen(2))
			Expect(r.deliver("d-2", work).body).To(Equal(dropped("source-inactive")))
		})
	})

	When("a subscription commits while admission waits for another connection's lock", func() {
		var gamma, lab int64

		BeforeEach(func(ctx SpecContext) {
			setUp(ctx, receiverOptions{})
			gamma = createWorkspace(ctx, "gamma")
			lab = createConnection(ctx, conn{Workspace: gamma, Kind: kindHubPAT})
		})

		It("stores the new subscriber's row too: the routes it waited with are read again", func(ctx SpecContext) {
			// A transaction holds the App connection's lifecycle lock without changing it (the
			// install flow holds it while GitHub answers), so the delivery's routes statement,
			// which read acme and beta, waits for it.
			holder := openTx(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, app)
			answer := deliverAsync("d-1")
			eventuallyWaitingOnLock(ctx, holder)

			// Meanwhile gamma subscribes to the repository, and that commits.
			subscribe(ctx, lab, "repository", repo.ID)
			Expect(holder.Rollback(ctx)).To(Succeed())

			// The delivery is stored after the subscription committed, so gamma receives it.
			var res response
			Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
			Expect(res.body).To(Equal(accepted(3, 0)))
			Expect(workspacesOf(rowsOf(ctx, "d-1"))).To(ConsistOf(acme, beta, gamma))
		})
	})

	When("route changes commit between the routes statement and the insert", func() {
		var churn *churningStore

		BeforeEach(func(ctx SpecContext) {
			churn = &churningStore{}
			setUp(ctx, receiverOptions{wrapStore: churn.wrap})
			// Another tenant's connection, which the delivery neither reads nor locks: each
			// change of it moves the route epoch all the same.
			churn.other = createConnection(ctx, conn{Workspace: createWorkspace(ctx, "gamma"), Kind: kindHubPAT})
		})

		It("reads the routes again and stores on them once a read holds until its insert", func(ctx SpecContext) {
			churn.times.Store(2)

			Expect(r.deliver("d-1", work).body).To(Equal(accepted(2, 0)))

			Expect(churn.changes.Load()).To(BeEquivalentTo(2))
			Expect(workspacesOf(rowsOf(ctx, "d-1"))).To(ConsistOf(acme, beta))
		})

		It("answers 503 and stores nothing when the routes change before every one of its inserts", func(ctx SpecContext) {
			churn.times.Store(1000)

			res := r.deliver("d-1", work)

			Expect(res.status).To(Equal(http.StatusServiceUnavailable), res.raw)
			Expect(res.body).To(Equal(errorBody("retry")))
			Expect(churn.changes.Load()).To(BeEquivalentTo(3), "three reads of the routes, each invalidated")
			Expect(rowsOf(ctx, "d-1")).To(BeEmpty())

			churn.times.Store(0)
			Expect(r.deliver("d-1", work).body).To(Equal(accepted(2, 0)))
		})
	})

	When("a lifecycle writer locks several connections in connection-id order while admission waits", func() {
		var gamma, lab int64

		BeforeEach(func(ctx SpecContext) {
			setUp(ctx, receiverOptions{})
			gamma = createWorkspace(ctx, "gamma")
			lab = createConnection(ctx, conn{Workspace: gamma, Kind: kindHubPAT})
			subscribe(ctx, lab, "repository", repo.ID)
		})

		// The delivery routes to app, pat and lab, created in that order. The writer (a
		// suspension of all three, as an instance-wide suspension would do) takes app's lock
		// first, admission then waits for it, and only then does the writer lock pat and lab.
		// Admission takes its locks in the same id order, so it holds none of them while it
		// waits for app and the writer gets them at once. Admission locking in any other order
		// would hold pat or lab while waiting for app: the writer would then wait for it, and
		// PostgreSQL would end one of the two with a deadlock after deadlock_timeout.
		It("neither deadlocks nor admits: the delivery waits for the writer's commit and is refused", func(ctx SpecContext) {
			Expect(app).To(BeNumerically("<", pat))
			Expect(pat).To(BeNumerically("<", lab))
			tx := holdLifecycleLock(ctx, app, `state = 'SUSPENDED'`)
			answer := deliverAsync("d-1")
			eventuallyWaitingOnLock(ctx, tx)

			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_, err := tx.Exec(wctx, `SELECT id FROM connection WHERE id = ANY ($1::bigint[]) ORDER BY id FOR UPDATE`,
				[]int64{pat, lab})
			Expect(err).NotTo(HaveOccurred(), "the writer must get the other locks: admission holds none of them")
			_, err = tx.Exec(wctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = ANY ($1::bigint[])`, []int64{pat, lab})
			Expect(err).NotTo(HaveOccurred())
			Expect(answer).NotTo(Receive(), "admission still waits for the writer")
			Expect(tx.Commit(ctx)).To(Succeed())

			var res response
			Eventually(answer).WithTimeout(15 * time.Second).Should(Receive(&res))
			Expect(res.body).To(Equal(dropped("source-inactive")))
			Expect(rowsOf(ctx, "")).To(BeEmpty(), "a suspension that took the lock first commits before admission's check")
		})
	})

	When("suspensions race admissions", func() {
		BeforeEach(func(ctx SpecContext) { setUp(ctx, receiverOptions{}) })

		It("never admits a row after the suspension took the lock", func(ctx SpecContext) {
			const rounds = 50
			outcomes := map[string]int{}
			for i := range rounds {
				setState(ctx, app, connection.Active)
				key := fmt.Sprintf("race-%d", i)
				start := make(chan struct{})
				answer := make(chan response, 1)
				go func() {
					defer GinkgoRecover()
					<-start
					answer <- r.deliver(key, work)
				}()
				// The suspension counts the delivery's rows right after its FOR UPDATE was
				// granted: every row admission stores must already be there.
				seen := make(chan int, 1)
				go func() {
					defer GinkgoRecover()
					<-start
					var n int
					Expect(pgx.BeginFunc(ctx, observer, func(tx pgx.Tx) error {
						if _, err := tx.Exec(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, app); err != nil {
							return err
						}
						if err := tx.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE delivery_key = $1`, key).Scan(&n); err != nil {
							return err
						}
						_, err := tx.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, app)
						return err
					})).To(Succeed())
					seen <- n
				}()
				close(start)

				var res response
				var before int
				Eventually(answer).WithTimeout(10 * time.Second).Should(Receive(&res))
				Eventually(seen).WithTimeout(10 * time.Second).Should(Receive(&before))
				Expect(rowsOf(ctx, key)).To(HaveLen(before), "round %d: a row was admitted after the suspension took the lock", i)
				if before == 0 {
					Expect(res.body).To(Equal(dropped("source-inactive")), "round %d", i)
					outcomes["suspended first, refused"]++
				} else {
					Expect(res.body).To(Equal(accepted(2, 0)), "round %d", i)
					outcomes["admitted, then suspended"]++
				}
			}
			GinkgoWriter.Printf("outcomes over %d rounds: %v\n", rounds, outcomes)
		})
	})

	When("a per-connection route changes after the delivery was verified", func() {
		It("fails with 503 so the provider retries against the current configuration", func(ctx SpecContext) {
			dir := &rotatingDirectory{inner: tableDirectory{pool: pool}}
			r = newReceiver(receiverOptions{directory: dir})
			ws := createWorkspace(ctx, "acme")
			lab := createConnection(ctx, conn{Workspace: ws, Kind: kindLab, Secret: "lab-secret"})
			subscribe(ctx, lab, "project", "42")
			dir.rotateOnce.Store(true)

			body := hubBody{Event: "Issue Hook", Resources: []hubResource{{Type: "project", ID: "42"}}}
			res := r.deliverTo(lab, "lab-secret", "g-1", body)

			Expect(res.status).To(Equal(http.StatusServiceUnavailable))
			Expect(res.retryAfter).NotTo(BeEmpty())
			Expect(rowsOf(ctx, "")).To(BeEmpty())
			Expect(r.metrics.Rejections("testlab", "route-changed")).To(Equal(1))
			Expect(r.deliverTo(lab, "lab-secret", "g-1", body).body).To(Equal(accepted(1, 0)))
		})
	})
})

var _ = Describe("Admission while the database is unavailable", func() {
	It("answers 503 retry with Retry-After", func(ctx SpecContext) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed()) // nothing listens there any more
		down, err := admissionstore.OpenPool(ctx, "postgres://postgres@"+addr+"/none?sslmode=disable&connect_timeout=2")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(down.Close)
		r := newReceiver(receiverOptions{pool: down})

		res := r.deliver("d-1", hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "1"}}})

		Expect(res.status).To(Equal(http.StatusServiceUnavailable))
		Expect(res.body).To(Equal(errorBody("retry")))
		Expect(res.retryAfter).NotTo(BeEmpty())
		Expect(r.metrics.Rejections("testhub", "unavailable")).To(Equal(1))
	})
})

// lockGate holds an admission transaction open right after it read the connections' state
// under their lifecycle locks, before it inserts and commits.
type lockGate struct {
	locked     chan struct{}
	release    chan struct{}
	once       sync.Once
	lockedOnce sync.Once
}

// open lets the held admission commit.
func (g *lockGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *lockGate) wrap(s ports.AdmissionStore) ports.AdmissionStore {
	return afterLocks{AdmissionStore: s, hook: func(context.Context) error {
		g.lockedOnce.Do(func() { close(g.locked) })
		<-g.release
		return nil
	}}
}

// afterLocks decorates the real admission store: hook runs inside each admission transaction
// right after LockConnections answered (whatever it answered), before the insert; its error
// fails the transaction.
type afterLocks struct {
	ports.AdmissionStore
	hook func(ctx context.Context) error
}

func (s afterLocks) Admit(ctx context.Context, fn func(context.Context, ports.AdmissionTx) error) error {
	return s.AdmissionStore.Admit(ctx, func(ctx context.Context, tx ports.AdmissionTx) error {
		return fn(ctx, hookedTx{AdmissionTx: tx, hook: s.hook})
	})
}

type hookedTx struct {
	ports.AdmissionTx
	hook func(ctx context.Context) error
}

func (t hookedTx) LockConnections(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	locked, err := t.AdmissionTx.LockConnections(ctx, ids)
	if herr := t.hook(ctx); herr != nil {
		return nil, herr
	}
	return locked, err
}

// rotatingDirectory commits a reconfiguration of the connection right after reading it, once:
// as if its secret was rotated between verification and the admission transaction.
type rotatingDirectory struct {
	inner      ports.ConnectionDirectory
	rotateOnce atomic.Bool
}

func (d *rotatingDirectory) SourceConnection(ctx context.Context, id int64) (*ports.SourceConnection, error) {
	c, err := d.inner.SourceConnection(ctx, id)
	if err == nil && d.rotateOnce.CompareAndSwap(true, false) {
		_, err = pool.Exec(ctx, `UPDATE connection SET config_version = config_version + 1 WHERE id = $1`, id)
	}
	return c, err
}

// churningStore commits a change of connection other right after the admission transaction
// took its lifecycle locks, as many times as times says: a route change that commits between
// the routes statement and the insert.
type churningStore struct {
	other          int64
	times, changes atomic.Int64
}

func (c *churningStore) wrap(s ports.AdmissionStore) ports.AdmissionStore {
	return afterLocks{AdmissionStore: s, hook: func(ctx context.Context) error {
		if c.times.Add(-1) < 0 {
			return nil
		}
		if _, err := observer.Exec(ctx, `UPDATE connection SET config_version = config_version + 1 WHERE id = $1`, c.other); err != nil {
			return err
		}
		c.changes.Add(1)
		return nil
	}}
}
