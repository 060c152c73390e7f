package inbox_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const owner = "server-a"

var _ = Describe("The inbox store", func() {
	var (
		ws     int64
		policy inbox.RetryPolicy
		lease  = time.Minute
	)

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
		var err error
		policy, err = inbox.NewRetryPolicy(time.Hour, 2*time.Hour, 2)
		Expect(err).NotTo(HaveOccurred())
	})

	claim := func(ctx context.Context, limit int) []ports.Claimed {
		claimed, err := store.Claim(ctx, owner, limit, lease)
		Expect(err).NotTo(HaveOccurred())
		return claimed
	}
	complete := func(ctx context.Context, c ports.Claimed) {
		d := c.Delivery
		Expect(d.Complete(d.Lease().Epoch(), clock.Now())).To(Succeed())
		applied, err := store.Record(ctx, []ports.Result{{Ack: ackOf(c), Decision: inbox.Completed()}})
		Expect(err).NotTo(HaveOccurred())
		Expect(applied).To(Equal([]ports.RecordStatus{ports.RecordApplied}))
	}
	fail := func(ctx context.Context, c ports.Claimed, cause error) inbox.Decision {
		d := c.Delivery
		dec, err := d.Fail(d.Lease().Epoch(), cause, policy, clock.Now())
		Expect(err).NotTo(HaveOccurred())
		applied, err := store.Record(ctx, []ports.Result{{Ack: ackOf(c), Decision: dec}})
		Expect(err).NotTo(HaveOccurred())
		Expect(applied).To(Equal([]ports.RecordStatus{ports.RecordApplied}))
		return dec
	}
	// expireAndReap claims the scope's head, moves the clock to the end of its lease and reaps it.
	expireAndReap := func(ctx context.Context) []ports.Reaped {
		claimed := claim(ctx, 1)
		Expect(claimed).To(HaveLen(1))
		clock.Advance(lease)
		reaped, err := store.Reap(ctx, policy, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(reaped).To(HaveLen(1))
		return reaped
	}

	Describe("Storing", func() {
		It("stores a redelivery once", func(ctx SpecContext) {
			first := storeRow(ctx, pool, row{Workspace: ws, DeliveryKey: "gh-1"})
			Expect(first).NotTo(BeZero())
			Expect(storeRow(ctx, pool, row{Workspace: ws, DeliveryKey: "gh-1"})).To(BeZero())
			Expect(countRows(ctx, pool, "delivery_key = 'gh-1'")).To(Equal(1))
		})

		When("the row belongs to the installation (NULL workspace)", func() {
			It("stores a redelivery once as well", func(ctx SpecContext) {
				Expect(storeRow(ctx, pool, row{Control: true, EventType: "installation", DeliveryKey: "gh-2"})).NotTo(BeZero())
				Expect(storeRow(ctx, pool, row{Control: true, EventType: "installation", DeliveryKey: "gh-2"})).To(BeZero())
				Expect(countRows(ctx, pool, "delivery_key = 'gh-2' AND workspace_id IS NULL")).To(Equal(1))
			})
		})
	})

	Describe("Claiming", func() {
		It("keeps a scope's order beside other scopes", func(ctx SpecContext) {
			a1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			b1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})
			a2 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			b2 := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})
			a3 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})

			first := claim(ctx, 10)
			Expect(ids(first)).To(Equal([]int64{a1, b1}), "one row per scope, the oldest")
			Expect(claim(ctx, 10)).To(BeEmpty(), "both scopes are leased")

			complete(ctx, first[0])
			second := claim(ctx, 10)
			Expect(ids(second)).To(Equal([]int64{a2}))
			complete(ctx, first[1])
			complete(ctx, second[0])
			third := claim(ctx, 10)
			Expect(ids(third)).To(Equal([]int64{b2, a3}))
		})

		It("increments attempt and epoch and leases from the database clock", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			clock.Advance(24 * time.Hour) // a store without a Clock must not read the spec's
			c, err := storeOn(pool, nil).Claim(ctx, owner, 1, lease)
			Expect(err).NotTo(HaveOccurred())
			Expect(c).To(HaveLen(1))
			Expect(c[0].Delivery.State()).To(Equal(inbox.Leased))
			Expect(c[0].Delivery.Attempt()).To(Equal(1))
			Expect(c[0].Delivery.Lease().Epoch()).To(Equal(inbox.Epoch(1)))
			Expect(c[0].Payload).To(MatchJSON(`{"action":"opened"}`))
			Expect(c[0].Headers).To(HaveKeyWithValue("X-GitHub-Event", "issues"))
			var (
				leasedFor float64
				leasedBy  string
			)
			Expect(pool.QueryRow(ctx, `SELECT extract(epoch FROM leased_until - clock_timestamp())::float8, leased_by
				FROM provider_event WHERE id = $1`, id).Scan(&leasedFor, &leasedBy)).To(Succeed())
			Expect(leasedFor).To(BeNumerically("~", lease.Seconds(), 5))
			Expect(leasedBy).To(Equal(owner))
		})

		It("leases from its Clock when one is set, and claims a row only once the Clock says it is due", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET due_at = clock_timestamp() + interval '1 hour' WHERE id = $1`, id)
			Expect(err).NotTo(HaveOccurred())
			Expect(claim(ctx, 1)).To(BeEmpty(), "due in an hour")

			clock.Advance(time.Hour)
			Expect(ids(claim(ctx, 1))).To(Equal([]int64{id}))
			var until time.Time
			Expect(pool.QueryRow(ctx, `SELECT leased_until FROM provider_event WHERE id = $1`, id).Scan(&until)).To(Succeed())
			Expect(until).To(BeTemporally("~", clock.Now().Add(lease), 5*time.Second))
		})

		It("leases several rows of distinct free scopes in one claim", func(ctx SpecContext) {
			var want []int64
			for _, repo := range []string{"a", "b", "c", "d"} {
				want = append(want, storeRow(ctx, pool, row{Workspace: ws, Repo: repo}))
				storeRow(ctx, pool, row{Workspace: ws, Repo: repo})
			}
			Expect(ids(claim(ctx, 10))).To(Equal(want))
		})

		When("an older row of the scope failed", func() {
			It("holds the later rows until the failed row succeeds, even while it is not due", func(ctx SpecContext) {
				a1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
				a2 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
				b1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})

				first := claim(ctx, 10)
				Expect(ids(first)).To(Equal([]int64{a1, b1}))
				dec := fail(ctx, first[0], errors.New("boom"))
				Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried))
				Expect(dec.DueAt()).To(BeTemporally(">", time.Now().Add(30*time.Minute)), "retry in an hour")
				complete(ctx, first[1])

				Expect(claim(ctx, 10)).To(BeEmpty(), "a1 is not due and a2 waits behind it")

				clock.Advance(dec.DueAt().Sub(clock.Now()))
				again := claim(ctx, 10)
				Expect(ids(again)).To(Equal([]int64{a1}))
				Expect(again[0].Delivery.Attempt()).To(Equal(2))
				complete(ctx, again[0])
				Expect(ids(claim(ctx, 10))).To(Equal([]int64{a2}))
			})
		})

		When("a workspace is suspended", func() {
			It("lets its rows wait and claims them once it is ACTIVE again", func(ctx SpecContext) {
				suspended := newWorkspace(ctx, pool, "paused", "SUSPENDED")
				id := storeRow(ctx, pool, row{Workspace: suspended})
				installation := storeRow(ctx, pool, row{Control: true, EventType: "installation"})

				Expect(ids(claim(ctx, 10))).To(Equal([]int64{installation}), "installation rows have no workspace to wait for")
				_, err := pool.Exec(ctx, `UPDATE workspace SET state = 'ACTIVE' WHERE id = $1`, suspended)
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(claim(ctx, 10))).To(Equal([]int64{id}))
			})
		})

		When("another claimer holds a scope's head row locked and has not committed", func() {
			It("passes over that scope without waiting and claims the other free scopes", func(ctx SpecContext) {
				a1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
				a2 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
				b1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})

				// The other claimer's claim statement has locked a1 (its CTE's FOR UPDATE) and not
				// committed yet.
				tx, err := pool.Begin(ctx)
				Expect(err).NotTo(HaveOccurred())
				defer func() { _ = tx.Rollback(context.Background()) }()
				_, err = tx.Exec(ctx, `SELECT id FROM provider_event WHERE id = $1 FOR UPDATE`, a1)
				Expect(err).NotTo(HaveOccurred())

				// A claim that waited for a1's lock would end at this deadline instead.
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				claimed, err := store.Claim(qctx, owner, 10, lease)
				Expect(err).NotTo(HaveOccurred(), "the claim must not wait on a locked head")
				Expect(ids(claimed)).To(Equal([]int64{b1}), "scope a is skipped: a2 must not pass its locked head")
				Expect(stateOf(ctx, pool, a2)).To(Equal("QUEUED"))

				Expect(tx.Rollback(ctx)).To(Succeed())
				Expect(ids(claim(ctx, 10))).To(Equal([]int64{a1}))
			})
		})

		When("a claim loses a race at the leased-scope index", func() {
			It("claims again instead of failing, and leaves the scope to the winner", func(ctx SpecContext) {
				a1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
				a2 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
				b1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})
				_, err := pool.Exec(ctx, `UPDATE provider_event SET state = 'DEAD', ended_at = now() WHERE id = $1`, a1)
				Expect(err).NotTo(HaveOccurred())

				// Another transaction leases a1 (as a replay followed by a claim could) and has not
				// committed: the claim's snapshot sees a1 DEAD and a2 as the head of scope a.
				tx, err := pool.Begin(ctx)
				Expect(err).NotTo(HaveOccurred())
				defer func() { _ = tx.Rollback(context.Background()) }()
				_, err = tx.Exec(ctx, `UPDATE provider_event SET state = 'LEASED', ended_at = NULL,
					leased_until = clock_timestamp() + interval '1 minute' WHERE id = $1`, a1)
				Expect(err).NotTo(HaveOccurred())

				type result struct {
					claimed []ports.Claimed
					err     error
				}
				done := make(chan result, 1)
				go func() {
					defer GinkgoRecover()
					c, err := store.Claim(ctx, owner, 10, lease)
					done <- result{c, err}
				}()
				// The claim waits on the uncommitted index entry of scope a.
				Eventually(func() int {
					var n int
					_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
						WHERE wait_event_type = 'Lock' AND query LIKE '%candidates%'`).Scan(&n)
					return n
				}).WithTimeout(5 * time.Second).Should(Equal(1))
				Expect(tx.Commit(ctx)).To(Succeed())

				var res result
				Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&res))
				Expect(res.err).NotTo(HaveOccurred())
				Expect(ids(res.claimed)).To(Equal([]int64{b1}))
				Expect(stateOf(ctx, pool, a2)).To(Equal("QUEUED"))
			})
		})

		It("has a unique leased-scope index that refuses a second LEASED row of a scope", func(ctx SpecContext) {
			a1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			a2 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET state = 'LEASED',
				leased_until = clock_timestamp() + interval '1 minute' WHERE id IN ($1, $2)`, a1, a2)
			var pgErr *pgconn.PgError
			Expect(errors.As(err, &pgErr)).To(BeTrue(), "got %v", err)
			Expect(pgErr.Code).To(Equal("23505"))
			Expect(pgErr.ConstraintName).To(Equal("uq_provider_event_leased_scope"))
		})
	})

	Describe("Lease fencing", func() {
		It("reports an outcome whose row is gone apart from one under a newer lease", func(ctx SpecContext) {
			erased := storeRow(ctx, pool, row{Workspace: ws, Repo: "1"})
			kept := storeRow(ctx, pool, row{Workspace: ws, Repo: "2"})
			claimed := claim(ctx, 10)
			Expect(ids(claimed)).To(ConsistOf(erased, kept))
			_, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, erased)
			Expect(err).NotTo(HaveOccurred())
			results := make([]ports.Result, len(claimed))
			for i, c := range claimed {
				results[i] = ports.Result{Ack: ackOf(c), Decision: inbox.Completed()}
			}
			status, err := store.Record(ctx, results)
			Expect(err).NotTo(HaveOccurred())
			for i, c := range claimed {
				want := ports.RecordApplied
				if c.Delivery.ID() == erased {
					want = ports.RecordGone
				}
				Expect(status[i]).To(Equal(want), "delivery %d", c.Delivery.ID())
			}
			Expect(stateOf(ctx, pool, kept)).To(Equal("DONE"))
		})

		It("refuses a taken-back lease's outcome", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			reaped := expireAndReap(ctx)
			Expect(reaped[0].Delivery.State()).To(Equal(inbox.Queued))
			old := ports.Ack{ID: id, Epoch: 1}

			current := claim(ctx, 1)
			Expect(ids(current)).To(Equal([]int64{id}))
			Expect(current[0].Delivery.Lease().Epoch()).To(Equal(inbox.Epoch(2)))
			snapshot := func() string {
				var s string
				Expect(pool.QueryRow(ctx, `SELECT row_to_json(e)::text FROM provider_event e WHERE id = $1`, id).Scan(&s)).To(Succeed())
				return s
			}
			before := snapshot()

			stale := current[0].Delivery // the same row, as the old claimer decided about it
			retry, err := stale.Fail(stale.Lease().Epoch(), errors.New("boom"), policy, time.Now())
			Expect(err).NotTo(HaveOccurred())
			stale = current[0].Delivery
			dead, err := stale.Fail(stale.Lease().Epoch(), inbox.ParsingFailure(errors.New("bad")), policy, time.Now())
			Expect(err).NotTo(HaveOccurred())
			for _, dec := range []inbox.Decision{inbox.Completed(), retry, dead} {
				applied, err := store.Record(ctx, []ports.Result{{Ack: old, Decision: dec}})
				Expect(err).NotTo(HaveOccurred())
				Expect(applied).To(Equal([]ports.RecordStatus{ports.RecordLeaseLost}), "outcome %s under the old epoch", dec.Outcome())
			}
			renewed, err := store.Renew(ctx, []ports.Ack{old}, time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(renewed).To(Equal([]bool{false}))
			released, err := store.Release(ctx, []ports.Ack{old})
			Expect(err).NotTo(HaveOccurred())
			Expect(released).To(BeZero())
			Expect(snapshot()).To(Equal(before), "nothing changed under the newer lease")

			complete(ctx, current[0])
			Expect(stateOf(ctx, pool, id)).To(Equal("DONE"))
		})

		It("renews a held lease and never shortens it", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			c := claim(ctx, 1)[0]
			until := func() time.Time {
				var t time.Time
				Expect(pool.QueryRow(ctx, `SELECT leased_until FROM provider_event WHERE id = $1`, id).Scan(&t)).To(Succeed())
				return t
			}
			first := until()
			renewed, err := store.Renew(ctx, []ports.Ack{ackOf(c)}, time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(renewed).To(Equal([]bool{true}))
			longer := until()
			Expect(longer).To(BeTemporally(">", first.Add(50*time.Minute)))
			renewed, err = store.Renew(ctx, []ports.Ack{ackOf(c)}, time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(renewed).To(Equal([]bool{true}))
			Expect(until()).To(Equal(longer))
		})

		It("releases a lease without counting the attempt", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			c := claim(ctx, 1)[0]
			released, err := store.Release(ctx, []ports.Ack{ackOf(c)})
			Expect(err).NotTo(HaveOccurred())
			Expect(released).To(Equal(1))
			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("QUEUED"))
			Expect(r.Attempt).To(BeZero())
			Expect(r.Leased).To(BeFalse())
			Expect(ids(claim(ctx, 1))).To(Equal([]int64{id}), "due at once, at the head of its scope")
		})
	})

	Describe("Reaping", func() {
		It("hands an expired lease back to QUEUED while budget is left", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			reaped := expireAndReap(ctx)
			Expect(reaped[0].Decision.Outcome()).To(Equal(inbox.OutcomeRetried))
			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("QUEUED"))
			Expect(r.UnknownFailures).To(Equal(1))
			Expect(r.Leased).To(BeFalse())
			Expect(ids(claim(ctx, 1))).To(Equal([]int64{id}), "due at once")
		})

		It("makes a reaped row DEAD with LeaseExpired after its attempts", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws, Payload: `{"keep":"me"}`})
			expireAndReap(ctx)
			reaped := expireAndReap(ctx) // policy: two unknown failures end the row
			Expect(reaped[0].Decision.Outcome()).To(Equal(inbox.OutcomeDead))
			Expect(reaped[0].Delivery.ErrorClass()).To(Equal(inbox.LeaseExpiredClass))
			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("DEAD"))
			Expect(r.ErrorClass).To(Equal("LeaseExpired"))
			Expect(r.UnknownFailures).To(Equal(2))
			Expect(r.Ended).To(BeTrue())
			Expect(r.Payload).To(MatchJSON(`{"keep":"me"}`))
		})

		It("leaves unexpired leases alone", func(ctx SpecContext) {
			storeRow(ctx, pool, row{Workspace: ws})
			claim(ctx, 1)
			reaped, err := store.Reap(ctx, policy, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(reaped).To(BeEmpty())
		})
	})

	Describe("Replay", func() {
		var account int64 = 7
		// deadRow stores a row and ends it DEAD through a permanent failure.
		deadRow := func(ctx context.Context, r row) int64 {
			id := storeRow(ctx, pool, r)
			c := claim(ctx, 10)
			Expect(ids(c)).To(ContainElement(id))
			for _, cl := range c {
				if cl.Delivery.ID() == id {
					fail(ctx, cl, inbox.ParsingFailure(errors.New("bad json")))
				}
			}
			Expect(stateOf(ctx, pool, id)).To(Equal("DEAD"))
			return id
		}

		It("replays a DEAD row with its payload and committed steps, at the head of its scope", func(ctx SpecContext) {
			id := deadRow(ctx, row{Workspace: ws, Repo: "a", Payload: `{"n":1}`})
			later := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			_, err := pool.Exec(ctx, `INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, 'issue.upsert')`, id)
			Expect(err).NotTo(HaveOccurred())

			d, err := store.Replay(ctx, ws, id, account)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.ID()).To(Equal(id))
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.Attempt()).To(BeZero())
			Expect(d.ReplayedBy()).To(Equal(account))
			Expect(d.ReplayedAt()).NotTo(BeZero())

			r := readRow(ctx, pool, id)
			Expect(r.State).To(Equal("QUEUED"))
			Expect(r.Attempt).To(BeZero())
			Expect(r.UnknownFailures).To(BeZero())
			Expect(r.Ended).To(BeFalse())
			Expect(r.ErrorClass).To(BeEmpty())
			Expect(r.ReplayedBy).To(Equal(account))
			Expect(r.Payload).To(MatchJSON(`{"n":1}`))
			var steps int
			Expect(pool.QueryRow(ctx, `SELECT count(*) FROM provider_event_step WHERE event_id = $1`, id).Scan(&steps)).To(Succeed())
			Expect(steps).To(Equal(1))

			Expect(ids(claim(ctx, 10))).To(Equal([]int64{id}), "the replayed row goes before %d", later)
			var audits int
			Expect(pool.QueryRow(ctx, `SELECT count(*) FROM provider_event_replay_audit`).Scan(&audits)).To(Succeed())
			Expect(audits).To(BeZero(), "workspace replays are not instance audits")
		})

		It("commits an audit record with an installation row's replay", func(ctx SpecContext) {
			id := deadRow(ctx, row{Control: true, EventType: "installation"})
			_, err := store.Replay(ctx, 0, id, account)
			Expect(err).NotTo(HaveOccurred())
			var event, acct int64
			var wsID *int64
			Expect(pool.QueryRow(ctx, `SELECT event_id, account_id, workspace_id FROM provider_event_replay_audit`).
				Scan(&event, &acct, &wsID)).To(Succeed())
			Expect(event).To(Equal(id))
			Expect(acct).To(Equal(account))
			Expect(wsID).To(BeNil())
		})

		It("refuses a row that is not DEAD as a conflict", func(ctx SpecContext) {
			id := storeRow(ctx, pool, row{Workspace: ws})
			_, err := store.Replay(ctx, ws, id, account)
			Expect(err).To(MatchError(ports.ErrConflict))
			var transition *inbox.TransitionError
			Expect(errors.As(err, &transition)).To(BeTrue())
			Expect(transition.From).To(Equal(inbox.Queued))
			Expect(stateOf(ctx, pool, id)).To(Equal("QUEUED"))
		})

		It("does not find a row of another workspace, or a workspace row as an installation row", func(ctx SpecContext) {
			other := newWorkspace(ctx, pool, "other", "ACTIVE")
			id := deadRow(ctx, row{Workspace: ws})
			_, err := store.Replay(ctx, other, id, account)
			Expect(err).To(MatchError(ports.ErrNotFound))
			_, err = store.Replay(ctx, 0, id, account)
			Expect(err).To(MatchError(ports.ErrNotFound))
			_, err = store.Replay(ctx, ws, id+1000, account)
			Expect(err).To(MatchError(ports.ErrNotFound))
			Expect(stateOf(ctx, pool, id)).To(Equal("DEAD"))
		})

		It("makes one transition of concurrent replays", func(ctx SpecContext) {
			id := deadRow(ctx, row{Control: true, EventType: "installation"})
			const n = 6
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { _, errs[i] = store.Replay(ctx, 0, id, account+int64(i)) })
			}
			wg.Wait()
			var ok, conflicts int
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ports.ErrConflict):
					conflicts++
				default:
					Fail("unexpected error: " + err.Error())
				}
			}
			Expect(ok).To(Equal(1))
			Expect(conflicts).To(Equal(n - 1))
			var audits int
			Expect(pool.QueryRow(ctx, `SELECT count(*) FROM provider_event_replay_audit WHERE event_id = $1`, id).Scan(&audits)).To(Succeed())
			Expect(audits).To(Equal(1))
		})
	})

	Describe("Retention", func() {
		// ended stores a row that ended age ago in state.
		ended := func(ctx context.Context, state string, age time.Duration) int64 {
			id := storeRow(ctx, pool, row{Workspace: ws, Repo: "r" + state + age.String()})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET state = $2, ended_at = $3 WHERE id = $1`,
				id, state, time.Now().Add(-age))
			Expect(err).NotTo(HaveOccurred())
			_, err = pool.Exec(ctx, `INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, 'x')`, id)
			Expect(err).NotTo(HaveOccurred())
			return id
		}

		It("deletes ended rows after their window and keeps younger ones", func(ctx SpecContext) {
			day := 24 * time.Hour
			oldDone := ended(ctx, "DONE", 4*day)
			youngDone := ended(ctx, "DONE", 2*day)
			oldDead := ended(ctx, "DEAD", 31*day)
			youngDead := ended(ctx, "DEAD", 10*day)
			queued := storeRow(ctx, pool, row{Workspace: ws})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET received_at = now() - interval '90 days' WHERE id = $1`, queued)
			Expect(err).NotTo(HaveOccurred())

			now := time.Now()
			deleted, err := store.DeleteEnded(ctx, now.Add(-3*day), now.Add(-30*day), 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(Equal(int64(2)))
			for _, id := range []int64{oldDone, oldDead} {
				Expect(stateOf(ctx, pool, id)).To(Equal("missing"))
			}
			for _, id := range []int64{youngDone, youngDead, queued} {
				Expect(stateOf(ctx, pool, id)).NotTo(Equal("missing"))
			}
			var steps int
			Expect(pool.QueryRow(ctx, `SELECT count(*) FROM provider_event_step`).Scan(&steps)).To(Succeed())
			Expect(steps).To(Equal(2), "the deleted rows' steps cascade")
		})

		It("deletes in batches of the given size", func(ctx SpecContext) {
			for range 5 {
				ended(ctx, "DONE", 100*time.Hour)
			}
			now := time.Now()
			deleted, err := store.DeleteEnded(ctx, now.Add(-72*time.Hour), now.Add(-720*time.Hour), 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(Equal(int64(2)))
			Expect(countRows(ctx, pool, "true")).To(Equal(3))
		})

		It("holds up no admission, claim, step or outcome while one of its batches is deleting", func(ctx SpecContext) {
			// Three DONE rows past the window in one scope, each with a step. Another session
			// holds the last row's step locked, so the retention batch stops in its cascade,
			// holding what it deleted so far, until that session ends.
			var old []int64
			for range 3 {
				old = append(old, ended(ctx, "DONE", 100*time.Hour))
			}
			blocker, err := pool.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = blocker.Rollback(context.WithoutCancel(ctx)) }()
			_, err = blocker.Exec(ctx, `SELECT 1 FROM provider_event_step WHERE event_id = $1 FOR UPDATE`, old[2])
			Expect(err).NotTo(HaveOccurred())

			// The batch's answer: the rows it deleted, or -1 when it failed.
			deleted := make(chan int64, 1)
			go func() {
				now := time.Now()
				n, err := store.DeleteEnded(context.WithoutCancel(ctx), now.Add(-72*time.Hour), now.Add(-720*time.Hour), 10)
				if err != nil {
					n = -1
				}
				deleted <- n
			}()
			support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, blocker), 1)

			// Meanwhile a delivery of the same scope is admitted, claimed, runs a step and
			// completes; the batch is still waiting when it has.
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			id := storeRow(wctx, pool, row{Workspace: ws, Repo: "rDONE" + (100 * time.Hour).String()})
			claimed, err := store.Claim(wctx, owner, 1, lease)
			Expect(err).NotTo(HaveOccurred(), "the claim waited for the retention batch")
			Expect(ids(claimed)).To(Equal([]int64{id}))
			_, err = pool.Exec(wctx, `INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, 'x')`, id)
			Expect(err).NotTo(HaveOccurred(), "the step waited for the retention batch")
			complete(wctx, claimed[0])
			Expect(deleted).NotTo(Receive(), "the batch is still held")

			Expect(blocker.Rollback(ctx)).To(Succeed())
			Eventually(deleted).WithTimeout(10 * time.Second).Should(Receive(Equal(int64(3))))
			Expect(stateOf(ctx, pool, id)).To(Equal("DONE"))
		})

		It("lets only the holder give the singleton lease up, to the next holder at once", func(ctx SpecContext) {
			mine, err := store.AcquireSingleton(ctx, "inbox-retention", "a", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeTrue())
			Expect(store.ReleaseSingleton(ctx, "inbox-retention", "b")).To(Succeed())
			mine, err = store.AcquireSingleton(ctx, "inbox-retention", "b", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeFalse(), "b cannot give up a's lease")

			Expect(store.ReleaseSingleton(ctx, "inbox-retention", "a")).To(Succeed())
			mine, err = store.AcquireSingleton(ctx, "inbox-retention", "b", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeTrue(), "a gave it up")
		})

		It("gives the singleton lease to one holder at a time", func(ctx SpecContext) {
			mine, err := store.AcquireSingleton(ctx, "inbox-retention", "a", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeTrue())
			mine, err = store.AcquireSingleton(ctx, "inbox-retention", "b", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeFalse())
			mine, err = store.AcquireSingleton(ctx, "inbox-retention", "a", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeTrue(), "the holder keeps it")

			clock.Advance(time.Hour)
			mine, err = store.AcquireSingleton(ctx, "inbox-retention", "b", time.Hour)
			Expect(err).NotTo(HaveOccurred())
			Expect(mine).To(BeTrue(), "an expired holder is replaced")
		})
	})

	It("counts rows by state", func(ctx SpecContext) {
		storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
		storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
		claim(ctx, 1)
		stats, err := store.Stats(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.Counts).To(Equal(map[inbox.State]int64{inbox.Queued: 1, inbox.Leased: 1, inbox.Done: 0, inbox.Dead: 0}))
	})

	It("measures how long the oldest QUEUED row has been due, not counting rows due later", func(ctx SpecContext) {
		stats, err := store.Stats(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.OldestQueuedAge).To(BeZero(), "an empty inbox has no age")

		storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
		later := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})
		_, err = pool.Exec(ctx, `UPDATE provider_event SET due_at = now() + interval '1 hour' WHERE id = $1`, later)
		Expect(err).NotTo(HaveOccurred())
		clock.Advance(90 * time.Second)
		stats, err = store.Stats(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.OldestQueuedAge).To(BeNumerically("~", 90*time.Second, 5*time.Second))

		_, err = pool.Exec(ctx, `UPDATE provider_event SET due_at = now() + interval '1 hour'`)
		Expect(err).NotTo(HaveOccurred())
		stats, err = store.Stats(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(stats.OldestQueuedAge).To(BeZero(), "rows waiting for their retry time are not overdue")
	})
})
