package inbox_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deadletterstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// fastest runs f three times and returns its shortest duration.
func fastest(f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// retainedRows labels the specs that share one workspace of millions of rows: the suite does not
// empty the database before them; their container's BeforeAll does, once.
const retainedRows = "retained-rows"

var _ = Describe("Inbox counts with millions of retained rows", Ordered, Label(retainedRows), func() {
	const retained = 2_000_000
	// Another tenant's dead letters: the DEAD filters must walk this workspace's part of the
	// dead-letter index, not every workspace's DEAD rows (with only this workspace's two, the
	// planner may take either index, and the spec would prove nothing about the others).
	const othersDead = 20_000
	var ws, other int64

	BeforeAll(func(ctx SpecContext) {
		Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
		_, err := pool.Exec(ctx, `
			INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
			                            payload, state, ended_at, received_at)
			SELECT $1::bigint, 'GITHUB', 'issues', 'done-' || g, 'ws:' || $1::bigint || ':github:repository:' || (g % 1000),
			       'github:repository:' || (g % 1000), '{}', 'DONE', now(), now()
			FROM generate_series(1, $2::int) g`, ws, retained)
		Expect(err).NotTo(HaveOccurred())
		other = newWorkspace(ctx, pool, "globex", "ACTIVE")
		_, err = pool.Exec(ctx, `
			INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
			                            payload, state, ended_at, received_at, error_class)
			SELECT $1::bigint, 'GITHUB', 'issues', 'dead-' || g, 'ws:' || $1::bigint || ':github:repository:' || (g % 100),
			       'github:repository:' || (g % 100), '{}', 'DEAD', now(), now(), $3
			FROM generate_series(1, $2::int) g`, other, othersDead, deadClass)
		Expect(err).NotTo(HaveOccurred())
		storeRows(ctx, pool, ws, []string{"a", "a", "b", "c", "d"}, `{}`)
		_, err = storeOn(pool, nil).Claim(ctx, owner, 1, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		for _, repo := range []string{"x", "y"} {
			id := storeRow(ctx, pool, row{Workspace: ws, Repo: repo})
			_, err = pool.Exec(ctx, `UPDATE provider_event SET state = 'DEAD', ended_at = now(), error_class = $2 WHERE id = $1`, id, deadClass)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = pool.Exec(ctx, `VACUUM ANALYZE provider_event`)
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(10*time.Minute))

	It("are exact for the backlog and the dead letters, estimated for DONE (said so), and cost a small fraction of one count over the table", func(ctx SpecContext) {
		By("the gauges")
		stats, err := store.Stats(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.Counts).To(HaveKeyWithValue(inbox.Queued, int64(4)))
		Expect(stats.Counts).To(HaveKeyWithValue(inbox.Leased, int64(1)))
		Expect(stats.Counts).To(HaveKeyWithValue(inbox.Dead, int64(othersDead+2)))
		Expect(stats.DoneEstimated).To(BeTrue())
		Expect(stats.Counts[inbox.Done]).To(BeNumerically("~", retained, retained/10))

		By("the workspace overview")
		reader, err := deadletterstore.New(pool)
		Expect(err).NotTo(HaveOccurred())
		o, err := reader.Overview(ctx, ws, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect([]int64{o.Counts[inbox.Queued], o.Counts[inbox.Leased], o.Counts[inbox.Dead]}).To(Equal([]int64{4, 1, 2}))
		Expect(o.Estimated).To(Equal([]inbox.State{inbox.Done}))
		Expect(o.Counts[inbox.Done]).To(BeNumerically("~", retained, retained/10))
		Expect(o.BusiestScopes).To(HaveLen(4))

		By("their cost beside one count over the table, as the gauges ran before")
		scan := fastest(func() {
			rows, err := pool.Query(ctx, `SELECT state, count(*) FROM provider_event GROUP BY state`)
			Expect(err).NotTo(HaveOccurred())
			rows.Close()
		})
		statsTime := fastest(func() {
			_, err := store.Stats(ctx)
			Expect(err).NotTo(HaveOccurred())
		})
		overviewTime := fastest(func() {
			_, err := reader.Overview(ctx, ws, 10)
			Expect(err).NotTo(HaveOccurred())
		})
		AddReportEntry("timings", map[string]time.Duration{"scan": scan, "stats": statsTime, "overview": overviewTime})
		Expect(slices.Max([]time.Duration{statsTime, overviewTime})).To(BeNumerically("<", scan/10),
			"stats %s, overview %s, one GROUP BY over the table %s", statsTime, overviewTime, scan)

		By("the deliveries browser: every filter walks an index in list order and stops after the page and the capped count")
		expectBrowserPlans(ctx, reader, ws)
		pageTime := fastest(func() {
			_, _, _, err := reader.ListDeliveries(ctx, ws, ports.DeliveryFilter{}, ports.PageRequest{Page: 0, Size: 50})
			Expect(err).NotTo(HaveOccurred())
		})
		lastPageTime := fastest(func() {
			items, total, capped, err := reader.ListDeliveries(ctx, ws, ports.DeliveryFilter{}, ports.PageRequest{Page: 49, Size: 200})
			Expect(err).NotTo(HaveOccurred())
			Expect(items).To(HaveLen(200))
			Expect(total).To(Equal(ports.DeliveryListCap))
			Expect(capped).To(BeTrue())
		})
		AddReportEntry("browser timings", map[string]time.Duration{"scan": scan, "first page": pageTime, "last page": lastPageTime})
		Expect(slices.Max([]time.Duration{pageTime, lastPageTime})).To(BeNumerically("<", scan/10),
			"first page %s, last page %s, one GROUP BY over the table %s", pageTime, lastPageTime, scan)
	}, NodeTimeout(10*time.Minute))

	It("answer a read past the operator read timeout with 503 retry", func(ctx SpecContext) {
		expectReadTimeoutAnswered(ctx)
	})

	// Last: the running server's claimers handle the backlog rows.
	It("keep another tenant's API and admission flat while one MEMBER floods the deliveries browser", func(ctx SpecContext) {
		expectFloodIsolated(ctx, startFloodServer(ctx, ws, other))
	}, NodeTimeout(10*time.Minute))
})

var _ = Describe("Inbox counts of a small inbox", func() {
	It("are all exact", func(ctx SpecContext) {
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		storeRows(ctx, pool, ws, []string{"a", "a"}, `{}`)
		claimed, err := store.Claim(ctx, owner, 1, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Expect(claimed).To(HaveLen(1))
		_, err = store.Record(ctx, []ports.Result{{Ack: ackOf(claimed[0]), Decision: inbox.Completed()}})
		Expect(err).NotTo(HaveOccurred())
		stats, err := store.Stats(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.DoneEstimated).To(BeFalse())
		Expect(stats.Counts).To(Equal(map[inbox.State]int64{inbox.Queued: 1, inbox.Leased: 0, inbox.Done: 1, inbox.Dead: 0}))
		Expect(inboxstore.DoneCountedUpTo).To(BeNumerically(">=", 1000))
	})
})

// sawRows says whether the server ever refreshed the inbox-rows gauge.
func (m *recordingMetrics) sawRows() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.rows) > 0
}

var _ = Describe("Inbox gauges on several servers", func() {
	It("are refreshed by one server only", func(ctx SpecContext) {
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
		servers := make([]*server, 3)
		for i := range servers {
			p, err := db.Pool(ctx, 8)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			st, err := inboxstore.New(p, inboxstore.Config{})
			Expect(err).NotTo(HaveOccurred())
			servers[i] = startServer(specConfig(fmt.Sprintf("server-%d", i)), st, consumer.NewRegistry())
		}
		refreshing := func() int {
			n := 0
			for _, s := range servers {
				if s.metrics.sawRows() {
					n++
				}
			}
			return n
		}
		Eventually(refreshing).WithTimeout(5 * time.Second).Should(Equal(1))
		// An absence over ten gauge intervals: the other servers never take the held lease.
		Consistently(refreshing).WithTimeout(time.Second).WithPolling(50 * time.Millisecond).Should(Equal(1))
		holder := support.Scalar[string](ctx, pool, `SELECT holder FROM singleton_lease WHERE name = $1`, consumer.GaugeSingleton)
		for i, s := range servers {
			Expect(s.metrics.sawRows()).To(Equal(holder == fmt.Sprintf("server-%d", i)))
		}
	})
})

// sharedBuffers sums the buffers (hit and read) an EXPLAIN (ANALYZE, BUFFERS) plan's top node
// touched: what the statement read, whatever the machine's speed.
var buffersLine = regexp.MustCompile(`Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?`)

func sharedBuffers(plan string) int {
	GinkgoHelper()
	m := buffersLine.FindStringSubmatch(plan)
	Expect(m).NotTo(BeNil(), plan)
	n := 0
	for _, v := range m[1:] {
		if v != "" {
			k, err := strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred())
			n += k
		}
	}
	return n
}

// deadClass is the error class of the spec's dead letters, shaped as the claimers record one.
const deadClass = "UNKNOWN:*errors.errorString"

// expectBrowserPlans runs each filter of the deliveries browser, and the combinations an
// operator uses, with EXPLAIN ANALYZE on a workspace of millions of rows: the page walks an index
// that serves the filter in list order (no sequential scan, no sort of the rows) and reads a
// bounded number of buffers, and the count walks an index and stops at the cap. A value that matches nothing in the
// workspace costs a few buffers, however many rows the workspace retains.
func expectBrowserPlans(ctx SpecContext, reader *deadletterstore.Reader, ws int64) {
	GinkgoHelper()
	const (
		all      = "ix_provider_event_workspace_received"
		byProv   = "ix_provider_event_workspace_provider_received"
		byEvent  = "ix_provider_event_workspace_event_received"
		backlog  = "ix_provider_event_backlog_received"
		dead     = "ix_provider_event_dead_received"
		byScope  = "ix_provider_event_workspace_scope_received"
		delivery = "uq_provider_event_delivery"
	)
	hourAgo, inAnHour, tomorrow := time.Now().Add(-time.Hour), time.Now().Add(time.Hour), time.Now().Add(24*time.Hour)
	scope := fmt.Sprintf("ws:%d:github:repository:7", ws)
	for _, c := range []struct {
		name    string
		filter  ports.DeliveryFilter
		indexes []string // the plan walks one of these (a value most rows have may walk the workspace's index: a page is at hand either way)
		sorts   bool
		empty   bool // nothing matches: a descent or two, whatever the workspace holds
	}{
		{"no filter", ports.DeliveryFilter{}, []string{all}, false, false},
		{"provider", ports.DeliveryFilter{Provider: "GITHUB"}, []string{all, byProv}, false, false},
		{"a provider with no rows", ports.DeliveryFilter{Provider: "SLACK"}, []string{byProv}, false, true},
		{"event type", ports.DeliveryFilter{EventType: "issues"}, []string{all, byEvent}, false, false},
		{"an event type with no rows", ports.DeliveryFilter{EventType: "no-such-event"}, []string{byEvent}, false, true},
		{"provider and event type", ports.DeliveryFilter{Provider: "GITHUB", EventType: "issues"}, []string{all, byProv, byEvent}, false, false},
		{"a provider with no rows and an event type", ports.DeliveryFilter{Provider: "SLACK", EventType: "issues"}, []string{byProv}, false, true},
		{"a provider and an event type with no rows", ports.DeliveryFilter{Provider: "GITHUB", EventType: "no-such-event"}, []string{byEvent}, false, true},
		{"received-at range", ports.DeliveryFilter{ReceivedAfter: hourAgo, ReceivedBefore: inAnHour}, []string{all}, false, false},
		{"a received-at range with no rows", ports.DeliveryFilter{ReceivedAfter: inAnHour, ReceivedBefore: tomorrow}, []string{all}, false, true},
		{"event type in a received-at range", ports.DeliveryFilter{EventType: "issues", ReceivedAfter: hourAgo, ReceivedBefore: inAnHour}, []string{all, byEvent}, false, false},
		{"subject", ports.DeliveryFilter{Subject: "github:repository:7"}, []string{byScope}, false, false},
		{"a subject with no rows", ports.DeliveryFilter{Subject: "github:repository:no-such-repo"}, []string{byScope}, false, true},
		{"scope", ports.DeliveryFilter{ScopeKey: scope}, []string{byScope}, false, false},
		{"a scope with no rows", ports.DeliveryFilter{ScopeKey: scope + "-none"}, []string{byScope}, false, true},
		{"scope and event type", ports.DeliveryFilter{ScopeKey: scope, EventType: "issues"}, []string{byScope}, false, false},
		{"delivery key", ports.DeliveryFilter{DeliveryKey: "done-123456"}, []string{delivery}, true, false},
		{"a delivery key with no row", ports.DeliveryFilter{DeliveryKey: "no-such-key"}, []string{delivery}, true, true},
		{"error class", ports.DeliveryFilter{ErrorClass: deadClass}, []string{dead}, false, false},
		{"an error class with no rows", ports.DeliveryFilter{ErrorClass: "PERMANENT:*json.SyntaxError"}, []string{dead}, false, true},
		{"state DEAD", ports.DeliveryFilter{State: inbox.Dead}, []string{dead}, false, false},
		{"state QUEUED", ports.DeliveryFilter{State: inbox.Queued}, []string{backlog}, false, false},
		{"state LEASED", ports.DeliveryFilter{State: inbox.Leased}, []string{backlog}, false, false},
		{"state DONE", ports.DeliveryFilter{State: inbox.Done}, []string{all}, false, false},
		{"state QUEUED of a provider with no rows", ports.DeliveryFilter{State: inbox.Queued, Provider: "SLACK"}, []string{backlog, byProv}, false, true},
		{"state DONE of an event type with no rows", ports.DeliveryFilter{State: inbox.Done, EventType: "no-such-event"}, []string{byEvent}, false, true},
		{"state DONE of a provider with no rows", ports.DeliveryFilter{State: inbox.Done, Provider: "SLACK"}, []string{byProv}, false, true},
		{"state DEAD of an event type", ports.DeliveryFilter{State: inbox.Dead, EventType: "issues"}, []string{dead, byEvent}, false, false},
	} {
		list, count, err := reader.ExplainDeliveries(ctx, ws, c.filter, ports.PageRequest{Page: 0, Size: 50}, true)
		Expect(err).NotTo(HaveOccurred())
		for _, plan := range []string{list, count} {
			Expect(plan).NotTo(ContainSubstring("Seq Scan"), "%s:\n%s", c.name, plan)
			Expect(indexesIn(plan)).NotTo(BeEmpty(), "%s:\n%s", c.name, plan)
		}
		// The page walks the filter's index in list order; the count, which needs no order, may
		// take any index that stops it early (the buffers below say it did).
		Expect(c.indexes).To(ContainElement(BeElementOf(indexesIn(list))), "%s:\n%s", c.name, list)
		if !c.sorts {
			Expect(list).NotTo(ContainSubstring("Sort"), "%s:\n%s", c.name, list)
		}
		Expect(sharedBuffers(list)).To(BeNumerically("<", 400), "%s:\n%s", c.name, list)
		// The count visits at most the cap's rows (one heap page each at worst), whatever the table holds.
		Expect(sharedBuffers(count)).To(BeNumerically("<", ports.DeliveryListCap+1000), "%s:\n%s", c.name, count)
		if c.empty {
			Expect(sharedBuffers(list)).To(BeNumerically("<", 50), "%s:\n%s", c.name, list)
			Expect(sharedBuffers(count)).To(BeNumerically("<", 50), "%s:\n%s", c.name, count)
		}
	}
}

// indexScan names the index of an index or index-only scan in an EXPLAIN plan.
var indexScan = regexp.MustCompile(`Index (?:Only )?Scan(?: Backward)? using (\w+)`)

// indexesIn lists the indexes a plan scans.
func indexesIn(plan string) []string {
	var out []string
	for _, m := range indexScan.FindAllStringSubmatch(plan, -1) {
		out = append(out, m[1])
	}
	return out
}
