package inbox_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// attemptRow is one provider_event_attempt row as stored.
type attemptRow struct {
	Epoch    int64
	Attempt  int32
	Started  *time.Time
	Ended    time.Time
	Server   *string
	Outcome  string
	Cause    *string
	Duration time.Duration
}

func attemptsOf(ctx context.Context, id int64) []attemptRow {
	GinkgoHelper()
	rows, err := pool.Query(ctx, `
		SELECT lease_epoch, attempt, started_at, ended_at, server, outcome, cause
		FROM provider_event_attempt WHERE event_id = $1 ORDER BY lease_epoch`, id)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var out []attemptRow
	for rows.Next() {
		var a attemptRow
		Expect(rows.Scan(&a.Epoch, &a.Attempt, &a.Started, &a.Ended, &a.Server, &a.Outcome, &a.Cause)).To(Succeed())
		if a.Started != nil {
			a.Duration = a.Ended.Sub(*a.Started)
		}
		out = append(out, a)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

func ptr[T any](v T) *T { return &v }

var _ = Describe("The attempt history of an inbox row", func() {
	var (
		ws     int64
		policy inbox.RetryPolicy
		lease  = time.Minute
	)

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
		var err error
		policy, err = inbox.NewRetryPolicy(time.Millisecond, time.Millisecond, 3)
		Expect(err).NotTo(HaveOccurred())
	})

	claimOne := func(ctx context.Context, server string) ports.Claimed {
		GinkgoHelper()
		claimed, err := store.Claim(ctx, server, 1, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(claimed).To(HaveLen(1))
		return claimed[0]
	}
	record := func(ctx context.Context, results ...ports.Result) {
		GinkgoHelper()
		status, err := store.Record(ctx, results)
		Expect(err).NotTo(HaveOccurred())
		for _, s := range status {
			Expect(s).To(Equal(ports.RecordApplied))
		}
	}
	failWith := func(c ports.Claimed, cause error) ports.Result {
		GinkgoHelper()
		d := c.Delivery
		dec, err := d.Fail(d.Lease().Epoch(), cause, policy, clock.Now())
		Expect(err).NotTo(HaveOccurred())
		return ports.Result{Ack: ackOf(c), Decision: dec}
	}
	refused := &inbox.ProviderError{Provider: "github", Op: "GET /repos", Kind: inbox.ProviderRefused, Status: 422}

	It("records every attempt in its own outcome write: number, start, end, server, outcome and cause", func(ctx SpecContext) {
		id := storeRow(ctx, pool, row{Workspace: ws})

		first := claimOne(ctx, "server-a")
		clock.Advance(3 * time.Second)
		record(ctx, failWith(first, refused))

		clock.Advance(time.Second)
		second := claimOne(ctx, "server-b")
		clock.Advance(2 * time.Second)
		record(ctx, ports.Result{Ack: ackOf(second), Decision: inbox.Completed()})

		got := attemptsOf(ctx, id)
		Expect(got).To(HaveLen(2))
		Expect(got[0]).To(MatchFields(IgnoreExtras, Fields{
			"Epoch": BeEquivalentTo(first.Delivery.Lease().Epoch()), "Attempt": BeEquivalentTo(1),
			"Server": Equal(ptr("server-a")), "Outcome": Equal("retried"), "Cause": Equal(ptr("provider-refused")),
			"Started": Not(BeNil()), "Duration": BeNumerically("~", 3*time.Second, 500*time.Millisecond),
		}))
		Expect(got[1]).To(MatchFields(IgnoreExtras, Fields{
			"Epoch": BeEquivalentTo(second.Delivery.Lease().Epoch()), "Attempt": BeEquivalentTo(2),
			"Server": Equal(ptr("server-b")), "Outcome": Equal("done"), "Cause": BeNil(),
			"Duration": BeNumerically("~", 2*time.Second, 500*time.Millisecond),
		}))
		Expect(got[1].Started.After(got[0].Ended)).To(BeTrue(), "the second attempt started after the first ended")
	})

	It("writes the attempt of every outcome of a batch, a DEAD row's last attempt included", func(ctx SpecContext) {
		done := storeRow(ctx, pool, row{Workspace: ws, Repo: "1"})
		dead := storeRow(ctx, pool, row{Workspace: ws, Repo: "2"})
		claimed, err := store.Claim(ctx, "server-a", 2, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(claimed).To(HaveLen(2))
		var results []ports.Result
		for _, c := range claimed {
			if c.Delivery.ID() == done {
				results = append(results, ports.Result{Ack: ackOf(c), Decision: inbox.Completed()})
			} else {
				results = append(results, failWith(c, inbox.ParsingFailure(errors.New("bad json"))))
			}
		}
		record(ctx, results...)

		Expect(attemptsOf(ctx, done)).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"Outcome": Equal("done"), "Attempt": BeEquivalentTo(1)})))
		Expect(attemptsOf(ctx, dead)).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
			"Outcome": Equal("dead"), "Cause": Equal(ptr("payload")), "Attempt": BeEquivalentTo(1),
		})))
		Expect(stateOf(ctx, pool, dead)).To(Equal("DEAD"))
	})

	It("shows a contention retry under the number it gives back, which the next attempt shows again", func(ctx SpecContext) {
		id := storeRow(ctx, pool, row{Workspace: ws})
		record(ctx, failWith(claimOne(ctx, "server-a"), inbox.ErrBusy))
		clock.Advance(time.Second)
		record(ctx, ports.Result{Ack: ackOf(claimOne(ctx, "server-a")), Decision: inbox.Completed()})

		got := attemptsOf(ctx, id)
		Expect(got).To(HaveLen(2))
		Expect(got[0].Outcome).To(Equal("retried"))
		Expect(got[0].Cause).To(Equal(ptr("contention")))
		Expect(got[0].Attempt).To(BeEquivalentTo(1))
		Expect(got[1].Attempt).To(BeEquivalentTo(1), "the contention retry gave attempt 1 back")
		Expect(readRow(ctx, pool, id).Attempt).To(Equal(1))
	})

	It("records a lease the reaper took back as a lease-expired attempt ending when the reaper judged it, and writes nothing for the late outcome", func(ctx SpecContext) {
		id := storeRow(ctx, pool, row{Workspace: ws})
		stale := claimOne(ctx, "server-a")
		clock.Advance(lease + 5*time.Second)
		reaped, err := store.Reap(ctx, policy, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(reaped).To(HaveLen(1))

		status, err := store.Record(ctx, []ports.Result{{Ack: ackOf(stale), Decision: inbox.Completed()}})
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal([]ports.RecordStatus{ports.RecordLeaseLost}))

		got := attemptsOf(ctx, id)
		Expect(got).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
			"Attempt": BeEquivalentTo(1), "Server": Equal(ptr("server-a")), "Outcome": Equal("lease-expired"),
			"Cause": Equal(ptr("lease-expired")), "Duration": BeNumerically(">=", lease),
		})))
	})

	It("records a stopping server's release as a released attempt that is not counted", func(ctx SpecContext) {
		id := storeRow(ctx, pool, row{Workspace: ws})
		c := claimOne(ctx, "server-a")
		released, err := store.Release(ctx, []ports.Ack{ackOf(c)})
		Expect(err).NotTo(HaveOccurred())
		Expect(released).To(Equal(1))
		record(ctx, ports.Result{Ack: ackOf(claimOne(ctx, "server-b")), Decision: inbox.Completed()})

		got := attemptsOf(ctx, id)
		Expect(got).To(HaveLen(2))
		Expect(got[0]).To(MatchFields(IgnoreExtras, Fields{"Attempt": BeEquivalentTo(1), "Outcome": Equal("released"),
			"Server": Equal(ptr("server-a")), "Cause": BeNil()}))
		Expect(got[1]).To(MatchFields(IgnoreExtras, Fields{"Attempt": BeEquivalentTo(1), "Outcome": Equal("done"),
			"Server": Equal(ptr("server-b"))}))
	})

	It("keeps the attempts as long as the row and erases them with it", func(ctx SpecContext) {
		kept := storeRow(ctx, pool, row{Workspace: ws, Repo: "1"})
		old := storeRow(ctx, pool, row{Workspace: ws, Repo: "2"})
		claimed, err := store.Claim(ctx, "server-a", 2, lease)
		Expect(err).NotTo(HaveOccurred())
		Expect(claimed).To(HaveLen(2))
		for _, c := range claimed {
			record(ctx, ports.Result{Ack: ackOf(c), Decision: inbox.Completed()})
		}
		_, err = pool.Exec(ctx, `UPDATE provider_event SET ended_at = ended_at - interval '10 days' WHERE id = $1`, old)
		Expect(err).NotTo(HaveOccurred())

		deleted, err := store.DeleteEnded(ctx, clock.Now().Add(-3*24*time.Hour), clock.Now().Add(-30*24*time.Hour), 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(deleted).To(BeEquivalentTo(1))
		Expect(attemptsOf(ctx, old)).To(BeEmpty(), "retention took the attempts with the row")
		Expect(attemptsOf(ctx, kept)).To(HaveLen(1))

		_, err = pool.Exec(ctx, `DELETE FROM workspace WHERE id = $1`, ws)
		Expect(err).NotTo(HaveOccurred())
		Expect(countRows(ctx, pool, "true")).To(BeZero())
		Expect(attemptsOf(ctx, kept)).To(BeEmpty(), "deleting the workspace took the attempts with its rows")
	})
})
