package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/internal/pgembedded"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Timings of the spec's servers: short, so the spec ends in well under a minute after the
// formation is up, and a poll interval the resumption is measured against.
const (
	pollInterval = 500 * time.Millisecond
	scopes       = 64 // enough that each server always finds free scopes (one leased row per scope)
	admitters    = 2  // per server
	// resumeBound is how soon after the new primary accepts writes both servers must claim and
	// reap again, and deliveries be handled again: a poll interval plus the loops' largest
	// backoff (itself at most a poll interval), with room for a loaded 2-core machine. The
	// pause once reported was 23 s.
	resumeBound = 8 * time.Second
)

// requireFormation skips without pg_auto_failover, except under CI, where .ci/run installs it
// and a skip would hide the spec.
func requireFormation() {
	if _, _, err := pgembedded.FindFormationBinaries(""); err != nil {
		if os.Getenv("CI") != "" {
			Fail("CI is set but pg_auto_failover is missing (.ci/run installs it): " + err.Error())
		}
		Skip("the failover spec needs pg_auto_failover: " + err.Error())
	}
}

// gaugeCount counts one server's inbox gauge refreshes: only the holder of the inbox-gauges
// singleton refreshes them.
type metrics struct {
	gauges  atomic.Int64
	mu      sync.Mutex
	retries map[string]int
}

func (m *metrics) Handled(string, string) {}
func (m *metrics) Retried(_, cause string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retries[cause]++
}
func (m *metrics) Dropped(string, string)                                 {}
func (m *metrics) RetentionFailed()                                       {}
func (m *metrics) HandlerDuration(context.Context, string, time.Duration) {}
func (m *metrics) InboxRows(state string, _ int64) {
	if state == "QUEUED" {
		m.gauges.Add(1)
	}
}
func (m *metrics) OldestQueuedAge(time.Duration) {}

var github = provider.MustNew("GITHUB")

// heldKey is the delivery whose first attempt is mid-transaction when the primary is killed.
const heldKey = "held-at-the-kill"

// timedStore is the server's real store, noting when its claims and reaps last succeeded.
type timedStore struct {
	ports.InboxStore
	claimed, reaped atomic.Int64 // UnixNano of the last success
}

func (t *timedStore) Claim(ctx context.Context, owner string, limit int, lease time.Duration) ([]ports.Claimed, error) {
	c, err := t.InboxStore.Claim(ctx, owner, limit, lease)
	if err == nil {
		t.claimed.Store(time.Now().UnixNano())
	}
	return c, err
}

func (t *timedStore) Reap(ctx context.Context, policy inbox.RetryPolicy, limit int) ([]ports.Reaped, error) {
	r, err := t.InboxStore.Reap(ctx, policy, limit)
	if err == nil {
		t.reaped.Store(time.Now().UnixNano())
	}
	return r, err
}

func (t *timedStore) ReapAfterOutage(ctx context.Context, policy inbox.RetryPolicy, limit int, outage inbox.Outage) ([]ports.Reaped, error) {
	r, err := t.InboxStore.ReapAfterOutage(ctx, policy, limit, outage)
	if err == nil {
		t.reaped.Store(time.Now().UnixNano())
	}
	return r, err
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// server is one "server" of the spec: its own pools on the multi-host URL, prepared as
// bootstrap prepares them, its admission store and its consumer.
type server struct {
	name      string
	held      chan int64 // the held delivery's id, once its first attempt is inside its step
	pool      *pgxpool.Pool
	admission *admissionstore.Store
	metrics   *metrics
	store     *timedStore
	handled   atomic.Int64
	stop      func()
}

func openPool(ctx context.Context, url, name string, admission bool) *pgxpool.Pool {
	GinkgoHelper()
	cfg, err := pgxpool.ParseConfig(url)
	Expect(err).NotTo(HaveOccurred())
	bootstrap.ConfigureFailover(cfg)
	if admission {
		admissionstore.Configure(cfg)
	} else {
		cfg.MaxConns = 12
		bootstrap.ConfigureMainPool(cfg)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())
	return p
}

func startServer(ctx context.Context, url, name string) *server {
	GinkgoHelper()
	s := &server{name: name, metrics: &metrics{retries: map[string]int{}}, held: make(chan int64, 1)}
	s.pool = openPool(ctx, url, name, false)
	apool := openPool(ctx, url, name+" admission", true)
	var err error
	s.admission, err = admissionstore.New(apool)
	Expect(err).NotTo(HaveOccurred())
	real, err := inboxstore.New(s.pool, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
	s.store = &timedStore{InboxStore: real}
	box, err := deliveryinbox.New(s.pool)
	Expect(err).NotTo(HaveOccurred())
	reg := consumer.NewRegistry()
	Expect(reg.Register(github, "issues", ports.HandlerFunc(func(ctx context.Context, d ports.Dispatch) error {
		// One fenced step: its effect commits with its step record or not at all.
		_, err := box.Step(ctx, inbox.MustStep("spec.apply"), func(ctx context.Context, tx ports.Tx) error {
			ptx, err := sqlkit.PgxTx(tx)
			if err != nil {
				return err
			}
			if _, err := ptx.Exec(ctx, `INSERT INTO failover_effect (event_id, scope_key, server) VALUES ($1, $2, $3)`,
				d.Delivery.ID(), d.Delivery.Scope().String(), name); err != nil {
				return err
			}
			if d.Delivery.DeliveryKey() == heldKey && d.Delivery.Attempt() == 1 {
				// The first attempt of the held delivery is inside its step, its transaction open,
				// when the primary dies.
				s.held <- d.Delivery.ID()
				_, err = ptx.Exec(ctx, `SELECT pg_sleep(60) /* held step */`)
				return err
			}
			return nil
		})
		if err == nil {
			s.handled.Add(1)
		}
		return err
	}))).To(Succeed())
	cfg := consumer.Config{
		Owner:          name,
		Claimers:       4,
		PollInterval:   pollInterval,
		RenewInterval:  time.Second,
		ReaperInterval: time.Second,
		GaugeInterval:  200 * time.Millisecond,
		BackoffMin:     50 * time.Millisecond,
		BackoffMax:     time.Second,
		StoreTimeout:   5 * time.Second,
		RetryBaseDelay: 100 * time.Millisecond,
		RetryMaxDelay:  time.Second,
		DispatchContext: func(ctx context.Context, c ports.Claimed) context.Context {
			return dispatch.BindDispatch(ctx, c)
		},
	}
	c, err := consumer.New(cfg, s.store, reg, consumer.NewSignal(), systemClock{}, support.Logger{}, s.metrics)
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	s.stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			Expect(err).NotTo(HaveOccurred())
		case <-time.After(60 * time.Second):
			Fail(name + ": consumer Run did not return")
		}
		apool.Close()
		s.pool.Close()
	})
	DeferCleanup(s.stop)
	return s
}

// admit stores one delivery through the server's admission store, as the receiver does before
// it answers 202; nil is the 202.
func (s *server) admit(ctx context.Context, key string, scope int) error {
	subject, err := inbox.NewSubject("github", "repository", fmt.Sprintf("r%d", scope))
	if err != nil {
		return err
	}
	d, err := inbox.NewDelivery(inbox.Admission{
		Provider: github, EventType: "issues", DeliveryKey: key, Control: true,
		Subject: subject,
	}, time.Now())
	if err != nil {
		return err
	}
	return s.admission.Admit(ctx, func(ctx context.Context, tx ports.AdmissionTx) error {
		_, err := tx.Insert(ctx, []ports.NewRow{{Delivery: d, Payload: json.RawMessage(`{}`), Headers: map[string]string{}}})
		return err
	})
}

var _ = Describe("Losing the database host", func() {
	It("fails over under admission and dispatch: every answered delivery ends once on the new primary, in order, no budget spent, one singleton holder", func(ctx SpecContext) {
		requireFormation()
		dir, err := os.MkdirTemp("", "hx-failover-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		f, err := pgembedded.StartFormation(ctx, pgembedded.FormationOptions{
			Dir: dir, Log: func(m string) { fmt.Fprintln(GinkgoWriter, "formation:", m) },
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			// Bounded: what pg_autoctl stop leaves after a minute is killed.
			stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			Expect(f.Stop(stopCtx)).To(Succeed())
		})
		url := f.URL()
		_, err = postgres.Migrate(ctx, url)
		Expect(err).NotTo(HaveOccurred())
		setup, err := pgx.Connect(ctx, url)
		Expect(err).NotTo(HaveOccurred())
		_, err = setup.Exec(ctx, `CREATE TABLE failover_effect (seq bigserial PRIMARY KEY, event_id bigint NOT NULL,
			scope_key text NOT NULL, server text NOT NULL)`)
		Expect(err).NotTo(HaveOccurred())
		Expect(setup.Close(ctx)).To(Succeed())

		servers := []*server{startServer(ctx, url, "server-a"), startServer(ctx, url, "server-b")}

		// Senders: each admits distinct deliveries in turn, and retries one that got no 202 with
		// the same key (a provider's redelivery), until told to stop.
		var (
			answeredMu sync.Mutex
			answered   = map[string]bool{}
			stopAdmit  atomic.Bool
			admitWG    sync.WaitGroup
			keySeq     atomic.Int64
		)
		for _, s := range servers {
			for i := range admitters {
				admitWG.Add(1)
				go func() {
					defer GinkgoRecover()
					defer admitWG.Done()
					for !stopAdmit.Load() {
						n := keySeq.Add(1)
						key := fmt.Sprintf("%s-%d-%d", s.name, i, n)
						for !stopAdmit.Load() {
							actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
							err := s.admit(actx, key, int(n)%scopes)
							cancel()
							if err == nil {
								answeredMu.Lock()
								answered[key] = true
								answeredMu.Unlock()
								break
							}
							time.Sleep(50 * time.Millisecond)
						}
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
		}
		stopSenders := sync.OnceFunc(func() { stopAdmit.Store(true); admitWG.Wait() })
		DeferCleanup(stopSenders)

		// Under load: both servers handle deliveries before the kill.
		Eventually(func() bool { return servers[0].handled.Load() > 30 && servers[1].handled.Load() > 30 }).
			WithTimeout(30 * time.Second).Should(BeTrue())
		primary, err := f.Primary(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(servers[0].admit(ctx, heldKey, scopes)).To(Succeed())
		var heldID int64
		Eventually(func() bool {
			select {
			case heldID = <-servers[0].held:
			case heldID = <-servers[1].held:
			default:
			}
			return heldID != 0
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		primaryConn, err := pgx.Connect(ctx, f.NodeURL(primary))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (int, error) {
			var n int
			err := primaryConn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%held step%' AND state = 'active' AND pid <> pg_backend_pid()`).Scan(&n)
			return n, err
		}).WithTimeout(10*time.Second).Should(Equal(1), "the held step runs on the primary")
		killedAt := time.Now()
		Expect(f.Kill(primary)).To(Succeed())
		By(fmt.Sprintf("killed the primary %s", primary.Name))

		// The standby becomes the writable primary: probed on the multi-host URL.
		var writable time.Time
		Eventually(func() error {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			c, err := pgx.Connect(pctx, url)
			if err != nil {
				return err
			}
			defer c.Close(context.Background())
			if _, err := c.Exec(pctx, `CREATE TEMP TABLE probe (x int); INSERT INTO probe VALUES (1)`); err != nil {
				return err
			}
			writable = time.Now()
			return nil
		}).WithTimeout(90 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "the new primary accepted writes %.1fs after the kill\n", writable.Sub(killedAt).Seconds())

		// No pause after the switch: both servers claim and reap again within a poll interval
		// and a backoff step (each at most pollInterval), with room for a loaded machine.
		for _, s := range servers {
			for _, loop := range []struct {
				name string
				last *atomic.Int64
			}{{"claiming", &s.store.claimed}, {"reaping", &s.store.reaped}} {
				Eventually(func() int64 { return loop.last.Load() }).WithTimeout(resumeBound).WithPolling(20*time.Millisecond).
					Should(BeNumerically(">", writable.UnixNano()), "%s resumes on %s", loop.name, s.name)
				fmt.Fprintf(GinkgoWriter, "%s: %s resumed %.2fs after the new primary accepted writes\n", s.name, loop.name,
					time.Unix(0, loop.last.Load()).Sub(writable).Seconds())
			}
		}
		// And deliveries are handled again at once. (Which server gets them is not asserted: with a
		// backlog, the server whose claims came back full first claims back to back and the other
		// one's polls can find every free scope head locked by those claims for a while.)
		before := servers[0].handled.Load() + servers[1].handled.Load()
		Eventually(func() int64 { return servers[0].handled.Load() + servers[1].handled.Load() }).
			WithTimeout(resumeBound).WithPolling(50*time.Millisecond).Should(BeNumerically(">", before),
			"deliveries are handled again within %s of the new primary accepting writes", resumeBound)
		fmt.Fprintf(GinkgoWriter, "deliveries handled again %.2fs after the new primary accepted writes\n",
			time.Since(writable).Seconds())

		// Keep admitting on the new primary for a moment, then let everything drain.
		time.Sleep(2 * time.Second)
		stopSenders()
		check, err := pgx.Connect(ctx, url)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = check.Close(context.Background()) })
		Eventually(func() (int, error) {
			var open int
			err := check.QueryRow(ctx, `SELECT count(*) FROM provider_event WHERE state <> 'DONE'`).Scan(&open)
			return open, err
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(BeZero())

		var node string
		Expect(check.QueryRow(ctx, `SELECT current_setting('port')`).Scan(&node)).To(Succeed())
		Expect(node).NotTo(Equal(fmt.Sprint(primary.Port)), "the checks read the new primary")

		By("every answered delivery is stored once and DONE on the new primary")
		answeredMu.Lock()
		keys := make([]string, 0, len(answered))
		for k := range answered {
			keys = append(keys, k)
		}
		answeredMu.Unlock()
		Expect(len(keys)).To(BeNumerically(">", 100))
		var stored, done int
		Expect(check.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'DONE')
			FROM provider_event WHERE delivery_key = ANY($1)`, keys).Scan(&stored, &done)).To(Succeed())
		Expect(stored).To(Equal(len(keys)), "answered deliveries missing on the new primary")
		Expect(done).To(Equal(len(keys)))

		By("no step committed twice, and every DONE row's step committed once")
		var twice, missing int
		Expect(check.QueryRow(ctx, `SELECT count(*) FROM (SELECT event_id FROM failover_effect GROUP BY event_id HAVING count(*) > 1) t`).Scan(&twice)).To(Succeed())
		Expect(twice).To(BeZero())
		Expect(check.QueryRow(ctx, `SELECT count(*) FROM provider_event e WHERE NOT EXISTS
			(SELECT 1 FROM failover_effect x WHERE x.event_id = e.id)`).Scan(&missing)).To(Succeed())
		Expect(missing).To(BeZero())

		By("per-scope order held: each scope's effects committed in the order of its rows")
		rows, err := check.Query(ctx, `SELECT scope_key, event_id FROM failover_effect ORDER BY seq`)
		Expect(err).NotTo(HaveOccurred())
		last := map[string]int64{}
		var violations []string
		for rows.Next() {
			var scope string
			var id int64
			Expect(rows.Scan(&scope, &id)).To(Succeed())
			if id < last[scope] {
				violations = append(violations, fmt.Sprintf("%s: %d after %d", scope, id, last[scope]))
			}
			last[scope] = id
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		Expect(violations).To(BeEmpty())

		By("no retry budget was spent by the failover (read from the rows)")
		var spent []string
		rows, err = check.Query(ctx, `SELECT id::text || ' ' || unknown_failures || ' ' || coalesce(error_class, '')
			FROM provider_event WHERE unknown_failures > 0 ORDER BY id`)
		Expect(err).NotTo(HaveOccurred())
		spent, err = pgx.CollectRows(rows, pgx.RowTo[string])
		Expect(err).NotTo(HaveOccurred())
		Expect(spent).To(BeEmpty())
		for _, s := range servers {
			s.metrics.mu.Lock()
			fmt.Fprintf(GinkgoWriter, "%s retries by cause: %v\n", s.name, s.metrics.retries)
			Expect(s.metrics.retries).NotTo(HaveKey("unknown"))
			Expect(s.metrics.retries).NotTo(HaveKey("lease-expired"))
			s.metrics.mu.Unlock()
		}

		By("the step the kill interrupted failed as a database transport failure and was retried without budget")
		var heldAttempt, heldBudget int
		Expect(check.QueryRow(ctx, `SELECT attempt, unknown_failures FROM provider_event WHERE id = $1`, heldID).
			Scan(&heldAttempt, &heldBudget)).To(Succeed())
		Expect(heldAttempt).To(BeNumerically(">=", 2))
		Expect(heldBudget).To(BeZero())
		transport := 0
		for _, s := range servers {
			s.metrics.mu.Lock()
			transport += s.metrics.retries["database-transport"]
			s.metrics.mu.Unlock()
		}
		Expect(transport).To(BeNumerically(">=", 1))

		By("exactly one server runs each singleton afterwards")
		var holders []string
		rows, err = check.Query(ctx, `SELECT name || '=' || holder FROM singleton_lease WHERE leased_until > clock_timestamp() ORDER BY name`)
		Expect(err).NotTo(HaveOccurred())
		holders, err = pgx.CollectRows(rows, pgx.RowTo[string])
		Expect(err).NotTo(HaveOccurred())
		Expect(holders).To(ContainElement(HavePrefix(consumer.GaugeSingleton + "=")))
		g0, g1 := servers[0].metrics.gauges.Load(), servers[1].metrics.gauges.Load()
		time.Sleep(2 * time.Second)
		refreshed := []string{}
		if servers[0].metrics.gauges.Load() > g0 {
			refreshed = append(refreshed, servers[0].name)
		}
		if servers[1].metrics.gauges.Load() > g1 {
			refreshed = append(refreshed, servers[1].name)
		}
		sort.Strings(refreshed)
		Expect(refreshed).To(HaveLen(1), "one server refreshes the inbox gauges after the failover (holders %v)", holders)
		Expect(strings.Join(holders, " ")).To(ContainSubstring(consumer.GaugeSingleton + "=" + refreshed[0]))

		for _, s := range servers {
			s.stop()
		}
	})
})
