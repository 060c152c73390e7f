package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Deliveries on remembered routes that arrive while a group transaction is committing share
// the next one (admissionstore, groupCommit). These specs hold the first group inside
// PostgreSQL (its insert waits for the workspace's key lock), let the next deliveries gather,
// and require that sharing a transaction changes nothing a delivery is answered or stored
// with: each delivery is decided by its own route epoch, a group that fails leaves every one of
// its deliveries to a transaction of its own, and a duplicate is still a duplicate. The store's
// pool has one connection, so one group transaction runs at a time.
var _ = Describe("Admission in group transactions", func() {
	var (
		r          *receiver
		acme, beta int64
		app, other int64
		repo       = hubResource{Type: "repository", ID: "1296269"}
		work       = hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{repo}}
		otherWork  = hubBody{Event: "issues", Installation: "2002", Resources: []hubResource{repo}}
	)

	BeforeEach(func(ctx SpecContext) {
		r = newReceiver(receiverOptions{pool: groupPool(ctx)})
		acme, beta = createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta")
		app = createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		other = createConnection(ctx, conn{Workspace: beta, Kind: kindHubApp, SourceKey: "2002"})
		subscribe(ctx, app, "repository", repo.ID)
		subscribe(ctx, other, "repository", repo.ID)
		Expect(r.deliver("warm-up", work).status).To(Equal(202)) // remembers both routes
		Expect(r.deliver("warm-up-other", otherWork).status).To(Equal(202))
	})

	// holdFirstGroup starts a group transaction whose insert waits inside PostgreSQL for acme's
	// workspace row, which it holds; release lets it go on. The delivery's answer arrives on
	// the channel.
	holdFirstGroup := func(ctx context.Context) (<-chan response, func()) {
		GinkgoHelper()
		hold := openTx(ctx, `SELECT 1 FROM workspace WHERE id = $1 FOR UPDATE`, acme)
		first := deliverAsync(r, "first", work)
		support.EventuallyBlockedBy(ctx, observer, support.BackendPID(ctx, hold), 1)
		return first, func() { Expect(hold.Rollback(ctx)).To(Succeed()) }
	}
	// gathered waits until n deliveries wait for the next group transaction.
	gathered := func(n int) {
		GinkgoHelper()
		Eventually(r.store.Waiting).WithTimeout(10 * time.Second).WithPolling(time.Millisecond).Should(Equal(n))
	}
	groups := func() (uint64, uint64) { return r.store.Groups() }

	It("commits the deliveries that gathered meanwhile in one transaction, each row stored once", func(ctx SpecContext) {
		first, release := holdFirstGroup(ctx)
		answers := make([]<-chan response, 10)
		for i := range answers {
			answers[i] = deliverAsync(r, fmt.Sprintf("d-%d", i), work)
		}
		gathered(len(answers))
		release()

		Expect(receiveAnswer(first).body).To(Equal(accepted(1, 0)))
		for i, a := range answers {
			Expect(receiveAnswer(a).body).To(Equal(accepted(1, 0)), "d-%d", i)
			Expect(rowsOf(ctx, fmt.Sprintf("d-%d", i))).To(HaveLen(1))
		}
		// The group's insert stores a row as the single-row insert stored the warm-up's.
		grouped, alone := rowsOf(ctx, "d-0")[0], rowsOf(ctx, "warm-up")[0]
		Expect(grouped.Headers).To(HaveKeyWithValue(headerDelivery, "d-0"))
		grouped.DeliveryKey, grouped.Headers[headerDelivery] = alone.DeliveryKey, alone.Headers[headerDelivery]
		Expect(grouped).To(Equal(alone))
		transactions, deliveries := groups()
		Expect(transactions).To(BeEquivalentTo(2), "the held group, then one for the ten")
		Expect(deliveries).To(BeEquivalentTo(11))
		confirmed, missed := r.store.Recalls()
		Expect(confirmed).To(BeEquivalentTo(11))
		Expect(missed).To(BeZero())
	})

	It("stores a delivery whose route epoch holds beside one whose epoch moved, which reads its routes again", func(ctx SpecContext) {
		// A change elsewhere moves the route epoch; acme's route is read again and remembered
		// at the new epoch, beta's stays remembered at the old one.
		third := createConnection(ctx, conn{Workspace: beta, Kind: kindHubApp, SourceKey: "3003"})
		subscribe(ctx, third, "repository", "777")
		Expect(r.deliver("refresh", work).status).To(Equal(202))
		_, missedBefore := r.store.Recalls()

		first, release := holdFirstGroup(ctx)
		stale := deliverAsync(r, "d-stale", otherWork)
		current := deliverAsync(r, "d-current", work)
		gathered(2)
		release()

		Expect(receiveAnswer(first).body).To(Equal(accepted(1, 0)))
		Expect(receiveAnswer(stale).body).To(Equal(accepted(1, 0)))
		Expect(receiveAnswer(current).body).To(Equal(accepted(1, 0)))
		Expect(workspacesOf(rowsOf(ctx, "d-stale"))).To(ConsistOf(beta))
		Expect(workspacesOf(rowsOf(ctx, "d-current"))).To(ConsistOf(acme))
		_, missed := r.store.Recalls()
		Expect(missed-missedBefore).To(BeEquivalentTo(1), "d-stale alone read its routes again")
		_, deliveries := groups()
		Expect(deliveries).To(BeEquivalentTo(1+1+2), "refresh's first attempt, first, then the two together")
	})

	It("leaves every delivery of a group that met a held lifecycle lock to a transaction of its own", func(ctx SpecContext) {
		first, release := holdFirstGroup(ctx)
		mine := deliverAsync(r, "d-acme", work)
		suspended := deliverAsync(r, "d-beta", otherWork)
		gathered(2)
		suspension := openTx(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, other)
		release()

		// The group's NOWAIT lock on beta's connection failed, so the group stored nothing:
		// acme's delivery is stored on routes read in its own transaction, beta's waits for
		// the suspension there and is refused once it commits.
		Expect(receiveAnswer(first).body).To(Equal(accepted(1, 0)))
		support.EventuallyBlockedBy(ctx, observer, support.BackendPID(ctx, suspension), 1)
		Expect(suspension.Commit(ctx)).To(Succeed())
		Expect(receiveAnswer(mine).body).To(Equal(accepted(1, 0)))
		Expect(receiveAnswer(suspended).body).To(Equal(dropped("source-inactive")))
		Expect(rowsOf(ctx, "d-acme")).To(HaveLen(1))
		Expect(rowsOf(ctx, "d-beta")).To(BeEmpty())
		_, missed := r.store.Recalls()
		Expect(missed).To(BeEquivalentTo(2))
	})

	It("answers the second of two copies of one delivery in a group as a duplicate", func(ctx SpecContext) {
		first, release := holdFirstGroup(ctx)
		a := deliverAsync(r, "d-twice", work)
		b := deliverAsync(r, "d-twice", work)
		gathered(2)
		release()

		Expect(receiveAnswer(first).body).To(Equal(accepted(1, 0)))
		Expect([]map[string]any{receiveAnswer(a).body, receiveAnswer(b).body}).
			To(ConsistOf(accepted(1, 0), accepted(0, 1)))
		Expect(rowsOf(ctx, "d-twice")).To(HaveLen(1))
	})

	It("answers every delivery of a group transaction that panicked with 503 retry, stores none, and frees its slot", func(ctx SpecContext) {
		first, release := holdFirstGroup(ctx)
		answers := make([]<-chan response, 3)
		for i := range answers {
			answers[i] = deliverAsync(r, fmt.Sprintf("p-%d", i), work)
		}
		gathered(len(answers))
		var faults atomic.Int64
		r.store.InjectGroupFault(func() {
			faults.Add(1)
			panic("injected fault in a group transaction")
		})
		release()

		Expect(receiveAnswer(first).body).To(Equal(accepted(1, 0)), "the held group passed the fault before it was injected")
		for i, a := range answers {
			res := receiveAnswer(a)
			Expect(res.status).To(Equal(503), "p-%d", i)
			Expect(res.body).To(Equal(errorBody("retry")), "p-%d", i)
			Expect(res.retryAfter).NotTo(BeEmpty(), "p-%d", i)
			Expect(rowsOf(ctx, fmt.Sprintf("p-%d", i))).To(BeEmpty(), "p-%d", i)
		}
		Expect(faults.Load()).To(BeEquivalentTo(1), "the three shared one group transaction")

		// The pool has one connection and one group slot: a slot or connection kept by the
		// panicked group would leave the provider's retries waiting for ever.
		r.store.InjectGroupFault(nil)
		for i := range answers {
			Expect(r.deliver(fmt.Sprintf("p-%d", i), work).body).To(Equal(accepted(1, 0)), "p-%d retried", i)
			Expect(rowsOf(ctx, fmt.Sprintf("p-%d", i))).To(HaveLen(1))
		}
		Expect(r.store.Waiting()).To(BeZero())
	})

	It("stores nothing for a delivery whose request ends while it waits for a group", func(ctx SpecContext) {
		first, release := holdFirstGroup(ctx)
		reqCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- r.store.Admit(reqCtx, func(ctx context.Context, tx ports.AdmissionTx) error {
				routes, err := tx.Routes(ctx, ports.RouteSpec{SourceKind: kindHubApp.String(), SourceKey: "1001",
					Resources: []ports.Resource{{Type: "repository", ID: repo.ID}}, RecipientsAnyConnection: true},
					testHub.String(), 0)
				if err != nil {
					return err
				}
				_, err = tx.Insert(ctx, []ports.NewRow{newRowFor(routes[0], "d-cancelled")})
				return err
			})
		}()
		gathered(1)
		cancel()

		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(MatchError(context.Canceled)))
		Expect(r.store.Waiting()).To(BeZero())
		release()
		Expect(receiveAnswer(first).body).To(Equal(accepted(1, 0)))
		Expect(rowsOf(ctx, "d-cancelled")).To(BeEmpty())
		_, deliveries := groups()
		Expect(deliveries).To(BeEquivalentTo(1), "only the held group ran")
	})
})

// Two servers, each with its own admission pool and group transactions, receive every
// delivery twice (a provider's retry racing the original to another server) for two
// installations at once, so their groups hold rows of the same keys: each key is stored once
// and answered once as stored and once as a duplicate, and no answer is a 503.
var _ = Describe("Admission in group transactions on several servers", func() {
	It("stores each of many racing copies once, answering the other copy as a duplicate", func(ctx SpecContext) {
		acme, beta := createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta")
		app := createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		other := createConnection(ctx, conn{Workspace: beta, Kind: kindHubApp, SourceKey: "2002"})
		repo := hubResource{Type: "repository", ID: "1296269"}
		subscribe(ctx, app, "repository", repo.ID)
		subscribe(ctx, other, "repository", repo.ID)
		bodies := []hubBody{
			{Event: "issues", Installation: "1001", Resources: []hubResource{repo}},
			{Event: "issues", Installation: "2002", Resources: []hubResource{repo}},
		}
		servers := make([]*receiver, 2)
		for i := range servers {
			p, err := admissionstore.OpenPool(ctx, db.URL)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			servers[i] = newReceiver(receiverOptions{pool: p})
			for j, b := range bodies {
				Expect(servers[i].deliver(fmt.Sprintf("warm-%d-%d", i, j), b).status).To(Equal(202))
			}
		}

		const keys = 120
		type answer struct {
			key string
			res response
		}
		answers := make(chan answer, 2*keys)
		work := make(chan int)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				defer GinkgoRecover()
				for k := range work {
					key := fmt.Sprintf("race-%d", k)
					answers <- answer{key, servers[w%2].deliver(key, bodies[k%2])}
				}
			})
		}
		for k := range keys {
			work <- k
			work <- k // the copy goes to the other server, or to the same one's next sender
		}
		close(work)
		wg.Wait()
		close(answers)

		stored, duplicates := map[string]float64{}, map[string]float64{}
		for a := range answers {
			Expect(a.res.status).To(Equal(202), "%s: %s", a.key, a.res.raw)
			stored[a.key] += a.res.body["stored"].(float64)
			duplicates[a.key] += a.res.body["duplicates"].(float64)
		}
		for k := range keys {
			key := fmt.Sprintf("race-%d", k)
			Expect(stored[key]).To(BeEquivalentTo(1), key)
			Expect(duplicates[key]).To(BeEquivalentTo(1), key)
			Expect(rowsOf(ctx, key)).To(HaveLen(1), key)
		}
		for i, r := range servers {
			transactions, deliveries := r.store.Groups()
			fmt.Fprintf(GinkgoWriter, "server %d: %d group transactions for %d deliveries\n", i, transactions, deliveries)
		}
	})
})

// groupPool is an admission pool of one connection whose lock waits outlast the specs' holds.
func groupPool(ctx context.Context) *pgxpool.Pool {
	GinkgoHelper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	Expect(err).NotTo(HaveOccurred())
	admissionstore.Configure(cfg)
	admissionstore.SetLockTimeout(cfg, 30*time.Second)
	cfg.MaxConns = 1
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(p.Close)
	return p
}

// deliverAsync delivers b under deliveryKey from another goroutine; the answer arrives on the
// channel.
func deliverAsync(r *receiver, deliveryKey string, b hubBody) <-chan response {
	out := make(chan response, 1)
	go func() {
		defer GinkgoRecover()
		out <- r.deliver(deliveryKey, b)
	}()
	return out
}

func receiveAnswer(c <-chan response) response {
	GinkgoHelper()
	var res response
	Eventually(c).WithTimeout(20 * time.Second).Should(Receive(&res))
	return res
}

// newRowFor is a minimal row for route under deliveryKey.
func newRowFor(route ports.Route, deliveryKey string) ports.NewRow {
	GinkgoHelper()
	subject, err := inbox.NewSubject("testhub", "resource", "1296269")
	Expect(err).NotTo(HaveOccurred())
	d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: route.WorkspaceID, Provider: testHub, EventType: "issues",
		DeliveryKey: deliveryKey, Subject: subject}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	return ports.NewRow{Delivery: d, ConnectionID: route.ConnectionID, Payload: json.RawMessage(`{"n":1}`), Headers: map[string]string{}}
}
