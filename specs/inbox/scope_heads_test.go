package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// scopeKey is the scope key of repository repo of workspace ws, as admission derives it.
func scopeKey(ws int64, repo string) string {
	d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: ws, Provider: github, EventType: "issues",
		DeliveryKey: "k", Subject: subject(repo)}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	return d.Scope().String()
}

// fillHotScope stores n QUEUED rows of one repository behind its head with generate_series.
func fillHotScope(ctx context.Context, p *pgxpool.Pool, ws int64, repo string, from, n int) {
	_, err := p.Exec(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload)
		SELECT $1, 'GITHUB', 'issues', 'hot-' || g, $2, $3, '{}'
		FROM generate_series($4::int, $4::int + $5::int - 1) g`,
		ws, scopeKey(ws, repo), subject(repo).String(), from, n)
	Expect(err).NotTo(HaveOccurred())
}

// scopeHeads reads provider_event_scope as scope key → head id.
func scopeHeads(ctx context.Context, p *pgxpool.Pool) map[string]int64 {
	rows, err := p.Query(ctx, `SELECT scope_key, head_id FROM provider_event_scope`)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var id int64
		Expect(rows.Scan(&k, &id)).To(Succeed())
		out[k] = id
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

var planBuffers = regexp.MustCompile(`Buffers: shared( hit=(\d+))?( read=(\d+))?`)

// claimPlanBuffers is the number of buffers the search for candidates touched (the Buffers
// line under "CTE candidates"): the walk, the probes and the locks, without the writes of the
// lease, whose index maintenance follows the depth of every index.
func claimPlanBuffers(plan string) int {
	i := strings.Index(plan, "CTE candidates")
	Expect(i).To(BeNumerically(">=", 0), plan)
	m := planBuffers.FindStringSubmatch(plan[i:])
	Expect(m).NotTo(BeNil(), plan)
	hit, _ := strconv.Atoi(m[2])
	read, _ := strconv.Atoi(m[4])
	return hit + read
}

// expectScopeWalk checks the claim's plan visits scopes, not rows: provider_event is only
// reached through one probe per visited scope, nothing is scanned whole, sorted or hashed.
func expectScopeWalk(plan string) {
	GinkgoHelper()
	Expect(plan).To(ContainSubstring("Index Scan using ix_provider_event_scope_head on provider_event_scope"), plan)
	Expect(plan).To(MatchRegexp(`Index (Only )?Scan using ix_provider_event_queued_scope on provider_event q`), plan)
	Expect(plan).To(MatchRegexp(`Index Scan using provider_event_pkey on provider_event e`), plan)
	for _, node := range []string{"Seq Scan", "Bitmap", "Sort", "Hash", "Merge", "Materialize", "JIT"} {
		Expect(plan).NotTo(ContainSubstring(node), plan)
	}
}

var _ = Describe("Claiming visits scopes, not rows", func() {
	const coldScopes = 300
	var (
		ws      int64
		coldIDs []int64
		hot     = "hot"
	)

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
	})

	// setUp stores the hot scope's head (LEASED, or failed and waiting for its retry), then
	// hotRows rows behind it, then one row in each cold scope.
	setUp := func(ctx context.Context, headLeased bool, hotRows int) {
		head := storeRow(ctx, pool, row{Workspace: ws, Repo: hot})
		claimed, err := store.Claim(ctx, "other-server", 1, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(Equal([]int64{head}))
		if !headLeased {
			d := claimed[0].Delivery
			dec, err := d.Fail(d.Lease().Epoch(), errors.New("provider is down"), mustPolicy(), time.Now())
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.DueAt()).To(BeTemporally(">", time.Now().Add(time.Minute)))
			status, err := store.Record(ctx, []ports.Result{{Ack: ackOf(claimed[0]), Decision: dec}})
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal([]ports.RecordStatus{ports.RecordApplied}))
		}
		fillHotScope(ctx, pool, ws, hot, 1, hotRows)
		repos := make([]string, coldScopes)
		for i := range repos {
			repos[i] = fmt.Sprintf("cold-%d", i)
		}
		coldIDs = storeRows(ctx, pool, ws, repos, `{"action":"opened"}`)
	}

	for _, headLeased := range []bool{true, false} {
		blocked := "behind a LEASED head"
		if !headLeased {
			blocked = "behind a head waiting for its retry"
		}
		When("a hot scope holds its rows "+blocked, func() {
			It("claims the oldest cold heads, and the claim touches as many pages with 60,000 rows behind the head as with 600", func(ctx SpecContext) {
				setUp(ctx, headLeased, 600)
				production := storeOn(pool, nil) // the plan the claimers get: "now" is the database's
				small, err := production.ExplainClaim(ctx, 32, true)
				Expect(err).NotTo(HaveOccurred())
				expectScopeWalk(small)

				fillHotScope(ctx, pool, ws, hot, 601, 59_400)
				big, err := production.ExplainClaim(ctx, 32, true)
				Expect(err).NotTo(HaveOccurred())
				expectScopeWalk(big)
				// One more index level costs a page per probe; a walk of the backlog would cost
				// a page per row behind the head.
				Expect(claimPlanBuffers(big)).To(BeNumerically("<=", claimPlanBuffers(small)+70), small+"\n\n"+big)
				Expect(claimPlanBuffers(big)).To(BeNumerically("<", 1000), big)

				claimed, err := store.Claim(ctx, owner, 32, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(claimed)).To(ConsistOf(coldIDs[:32]))
			})
		})
	}

	When("the retained rows outnumber the live ones", func() {
		It("probes a scope's LEASED and QUEUED rows through their partial indexes only, and no index led by the scope holds the retained rows", func(ctx SpecContext) {
			setUp(ctx, true, 600)
			// 200,000 DONE rows over the same scopes, then the statistics autoanalyze would take:
			// a LEASED row is rarely in their sample, so the planner costs "this scope's LEASED
			// rows" at one row through any index that starts with the scope.
			_, err := pool.Exec(ctx, `
				INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
				                            payload, state, ended_at, received_at)
				SELECT $1, 'GITHUB', 'issues', 'done-' || g, s.keys[g % 300 + 1], 'github:repository:x', '{}', 'DONE', now(), now()
				FROM generate_series(1, 200000) g,
				     (SELECT array_agg(scope_key ORDER BY scope_key) AS keys FROM provider_event_scope) s
				WHERE g % 300 < cardinality(s.keys)`, ws)
			Expect(err).NotTo(HaveOccurred())
			_, err = pool.Exec(ctx, `ANALYZE provider_event; ANALYZE provider_event_scope`)
			Expect(err).NotTo(HaveOccurred())

			// An index that starts with scope_key and is not partial on a live state would let a
			// tie in those costs walk every retained row of the scope on each probe (as a
			// soak once showed: the browser's old scope index, taken after an autoanalyze).
			rows, err := pool.Query(ctx, `
				SELECT c.relname FROM pg_index i
				JOIN pg_class c ON c.oid = i.indexrelid
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
				WHERE i.indrelid = 'provider_event'::regclass AND a.attname = 'scope_key'
				  AND coalesce(pg_get_expr(i.indpred, i.indrelid), '') !~ 'state = ''(QUEUED|LEASED)''::text'`)
			Expect(err).NotTo(HaveOccurred())
			unbounded, err := pgx.CollectRows(rows, pgx.RowTo[string])
			Expect(err).NotTo(HaveOccurred())
			Expect(unbounded).To(BeEmpty())

			plan, err := storeOn(pool, nil).ExplainClaim(ctx, 32, true)
			Expect(err).NotTo(HaveOccurred())
			expectScopeWalk(plan)
			Expect(plan).To(MatchRegexp(`Index (Only )?Scan using uq_provider_event_leased_scope on provider_event l`), plan)
			Expect(claimPlanBuffers(plan)).To(BeNumerically("<", 1000), plan)
		})
	})

	When("the statistics mislead the planner", func() {
		It("keeps the same plan and claims the same rows", func(ctx SpecContext) {
			// Statistics taken while the tables were nearly empty, then made smaller still.
			seed := storeRow(ctx, pool, row{Workspace: ws, Repo: "seed"})
			_, err := pool.Exec(ctx, `ANALYZE provider_event; ANALYZE provider_event_scope; ANALYZE workspace`)
			Expect(err).NotTo(HaveOccurred())
			_, err = pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, seed)
			Expect(err).NotTo(HaveOccurred())
			setUp(ctx, false, 40_000)
			_, err = pool.Exec(ctx, `UPDATE pg_class SET reltuples = 1, relpages = 1
				WHERE relname IN ('provider_event', 'provider_event_scope', 'ix_provider_event_queued_scope',
				                  'ix_provider_event_scope_head', 'provider_event_pkey')`)
			Expect(err).NotTo(HaveOccurred())

			// The database clock's plan (production) and a spec clock's are the same walk.
			for _, st := range []*inboxstore.Store{storeOn(pool, nil), store} {
				plan, err := st.ExplainClaim(ctx, 32, true)
				Expect(err).NotTo(HaveOccurred())
				expectScopeWalk(plan)
				Expect(claimPlanBuffers(plan)).To(BeNumerically("<", 1000), plan)
			}

			claimed, err := store.Claim(ctx, owner, 32, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(claimed)).To(ConsistOf(coldIDs[:32]))
		})

		It("runs the claim under the pinned settings only inside its own pipeline", func(ctx SpecContext) {
			conn, err := pool.Acquire(ctx)
			Expect(err).NotTo(HaveOccurred())
			defer conn.Release()
			batch := &pgx.Batch{}
			batch.Queue(`SELECT set_config('enable_seqscan', 'off', true)`)
			batch.Queue(`SELECT current_setting('enable_seqscan')`)
			res := conn.SendBatch(ctx, batch)
			_, err = res.Exec()
			Expect(err).NotTo(HaveOccurred())
			var inside string
			Expect(res.QueryRow().Scan(&inside)).To(Succeed())
			Expect(res.Close()).To(Succeed())
			var after string
			Expect(conn.QueryRow(ctx, `SELECT current_setting('enable_seqscan')`).Scan(&after)).To(Succeed())
			Expect([]string{inside, after}).To(Equal([]string{"off", "on"}))
		})
	})
})

func mustPolicy() inbox.RetryPolicy {
	p, err := inbox.NewRetryPolicy(10*time.Minute, time.Hour, 10)
	Expect(err).NotTo(HaveOccurred())
	return p
}

var _ = Describe("Scope heads", func() {
	var ws int64
	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
	})

	complete := func(ctx context.Context, c ports.Claimed) {
		status, err := store.Record(ctx, []ports.Result{{Ack: ackOf(c), Decision: inbox.Completed()}})
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal([]ports.RecordStatus{ports.RecordApplied}))
	}

	It("follow admission, completion and the last row of a scope", func(ctx SpecContext) {
		a := storeRows(ctx, pool, ws, []string{"a", "a", "b"}, `{}`)
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[0], scopeKey(ws, "b"): a[2]}))

		claimed, err := store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(ConsistOf(a[0], a[2]))
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[0], scopeKey(ws, "b"): a[2]}),
			"a LEASED head still heads its scope")
		for _, c := range claimed {
			complete(ctx, c)
		}
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[1]}))
	})

	It("follow one outcome write that ends the heads of many scopes, and leave a scope whose admission is in flight as it was", func(ctx SpecContext) {
		a := storeRows(ctx, pool, ws, []string{"a", "a", "b", "b", "c", "d", "e"}, `{}`)
		claimed, err := store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(ConsistOf(a[0], a[2], a[4], a[5], a[6]))

		// An admission of scope e is in flight: its transaction holds e's latch (shared) until
		// it commits, so the outcome write must not drop e's row, whose new row it cannot see.
		tx, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		var late int64
		Expect(tx.QueryRow(ctx, `
			INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload)
			VALUES ($1, 'GITHUB', 'issues', 'late-e', $2, $3, '{}') RETURNING id`,
			ws, scopeKey(ws, "e"), subject("e").String()).Scan(&late)).To(Succeed())

		results := make([]ports.Result, len(claimed))
		for i, c := range claimed {
			results[i] = ports.Result{Ack: ackOf(c), Decision: inbox.Completed()}
		}
		status, err := store.Record(ctx, results)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(HaveEach(ports.RecordApplied))
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{
			scopeKey(ws, "a"): a[1], scopeKey(ws, "b"): a[3], scopeKey(ws, "e"): a[6],
		}), "a and b move to their next row, c and d are gone, e is left for its admission")

		Expect(tx.Commit(ctx)).To(Succeed())
		claimed, err = store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(ConsistOf(a[1], a[3], late))
	})

	It("take a replayed row back to the head of its scope", func(ctx SpecContext) {
		a := storeRows(ctx, pool, ws, []string{"a", "a"}, `{}`)
		_, err := pool.Exec(ctx, `UPDATE provider_event SET state = 'DEAD', ended_at = now(), error_class = 'X' WHERE id = $1`, a[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[1]}))

		_, err = store.Replay(ctx, ws, a[0], 7)
		Expect(err).NotTo(HaveOccurred())
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[0]}))
		claimed, err := store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(Equal([]int64{a[0]}))
	})

	It("follow deletions: an erased head, and a deleted workspace's scopes", func(ctx SpecContext) {
		a := storeRows(ctx, pool, ws, []string{"a", "a"}, `{}`)
		other := newWorkspace(ctx, pool, "other", "ACTIVE")
		storeRows(ctx, pool, other, []string{"a", "b"}, `{}`)

		_, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, a[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(scopeHeads(ctx, pool)).To(HaveKeyWithValue(scopeKey(ws, "a"), a[1]))

		_, err = pool.Exec(ctx, `DELETE FROM workspace WHERE id = $1`, other)
		Expect(err).NotTo(HaveOccurred())
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[1]}))
	})

	It("are only an index: a head left behind still claims the scope's oldest row, and retention repairs it", func(ctx SpecContext) {
		a := storeRows(ctx, pool, ws, []string{"a", "a"}, `{}`)
		// As a removal that found the scope's latch busy leaves it: a head that is gone, and
		// a scope with nothing left.
		_, err := pool.Exec(ctx, `UPDATE provider_event_scope SET head_id = 0 WHERE scope_key = $1`, scopeKey(ws, "a"))
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `INSERT INTO provider_event_scope (scope_key, head_id) VALUES ('ws:1:github:repository:gone', 5)`)
		Expect(err).NotTo(HaveOccurred())

		claimed, err := store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(Equal([]int64{a[0]}))

		_, err = store.DeleteEnded(ctx, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour), 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(scopeHeads(ctx, pool)).To(Equal(map[string]int64{scopeKey(ws, "a"): a[0]}))
	})

	It("skip the scopes of a suspended workspace without losing them", func(ctx SpecContext) {
		suspended := newWorkspace(ctx, pool, "paused", "SUSPENDED")
		s := storeRows(ctx, pool, suspended, []string{"a"}, `{}`)
		a := storeRows(ctx, pool, ws, []string{"a"}, `{}`)
		claimed, err := store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(Equal(a))

		_, err = pool.Exec(ctx, `UPDATE workspace SET state = 'ACTIVE' WHERE id = $1`, suspended)
		Expect(err).NotTo(HaveOccurred())
		claimed, err = store.Claim(ctx, owner, 10, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(claimed)).To(Equal(s))
	})
})

// rowRuns counts handler runs per row and records any row that runs twice at once.
type rowRuns struct {
	mu       sync.Mutex
	inFlight map[int64]bool
	runs     map[int64]int
	twice    []int64
}

func (r *rowRuns) enter(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inFlight[id] {
		r.twice = append(r.twice, id)
	}
	r.inFlight[id] = true
	r.runs[id]++
}

func (r *rowRuns) exit(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inFlight, id)
}

var _ = Describe("Claiming on many servers while deliveries arrive", func() {
	It("never hands one row to two handlers at once, keeps each scope's order and leaves no scope behind", func(ctx SpecContext) {
		const (
			servers  = 3
			claimers = 4
			batches  = 40
			perBatch = 50
			scopes   = 12
		)
		ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
		runs := &rowRuns{inFlight: map[int64]bool{}, runs: map[int64]int{}}
		log := newScopeLog()
		var failures atomic.Int64
		handler := func(_ context.Context, d ports.Dispatch) error {
			id := d.Delivery.ID()
			runs.enter(id)
			log.enter(d)
			var err error
			if rand.Float64() < 0.1 {
				failures.Add(1)
				err = inbox.Transient("provider", errors.New("timeout"))
			}
			log.exit(d, err == nil)
			runs.exit(id)
			return err
		}
		for i := range servers {
			p, err := db.Pool(ctx, claimers+4)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			st, err := inboxstore.New(p, inboxstore.Config{})
			Expect(err).NotTo(HaveOccurred())
			cfg := specConfig(fmt.Sprintf("server-%d", i))
			cfg.Claimers = claimers
			cfg.ClaimBatch = 4
			cfg.PoisonMaxAttempts = 1000
			cfg.RetryBaseDelay = time.Millisecond
			cfg.RetryMaxDelay = 3 * time.Millisecond
			cfg.PollInterval = 5 * time.Millisecond
			startServer(cfg, st, registry(handler))
		}

		// Admission keeps storing rows, most of them into one hot scope, from two writers, while
		// the servers drain them.
		var writers sync.WaitGroup
		for w := range 2 {
			writers.Go(func() {
				defer GinkgoRecover()
				for b := range batches / 2 {
					repos := make([]string, perBatch)
					for i := range repos {
						if i%2 == 0 {
							repos[i] = "hot"
						} else {
							repos[i] = fmt.Sprintf("%d", (b+i+w)%scopes)
						}
					}
					// One batch locks its scopes' head rows in the order it inserts them (the
					// per-row scope trigger); two writers must take them in one order, as
					// admission does (its rows of one delivery go in connection-id order), or
					// they deadlock on each other, which is this spec's artefact, not a claim.
					slices.Sort(repos)
					storeRows(ctx, pool, ws, repos, `{}`)
				}
			})
		}
		writers.Wait()

		total := batches * perBatch
		Eventually(func() int { return countRows(ctx, pool, "state = 'DONE'") }).
			WithTimeout(3 * time.Minute).WithPolling(100 * time.Millisecond).Should(Equal(total))
		runs.mu.Lock()
		twice, counted := slices.Clone(runs.twice), len(runs.runs)
		runs.mu.Unlock()
		Expect(twice).To(BeEmpty(), "rows handled twice at once")
		Expect(counted).To(Equal(total))
		Expect(failures.Load()).To(BeNumerically(">", 0))
		expectScopeOrder(ctx, pool, log)
		Expect(scopeHeads(ctx, pool)).To(BeEmpty(), "every scope row went with its scope's last row")
	})
})
