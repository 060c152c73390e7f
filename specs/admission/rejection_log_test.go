package admission_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/rejectionstore"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// logged reads the rejection log as stored, by (provider, connection, reason).
func logged(ctx context.Context) map[[3]any]int64 {
	GinkgoHelper()
	rows, err := pool.Query(ctx, `SELECT provider, connection_id, reason, sum(count)::bigint FROM webhook_rejection GROUP BY 1, 2, 3`)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	out := map[[3]any]int64{}
	for rows.Next() {
		var (
			p, reason string
			conn, n   int64
		)
		Expect(rows.Scan(&p, &conn, &reason, &n)).To(Succeed())
		out[[3]any{p, conn, reason}] = n
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

// insertedRejectionRows is how many rows were ever inserted into webhook_rejection (the
// statistics collector's count, flushed first).
func insertedRejectionRows(ctx context.Context) int64 {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	Expect(err).NotTo(HaveOccurred())
	return support.Scalar[int64](ctx, pool, `SELECT coalesce((SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE relname = 'webhook_rejection'), 0)`)
}

var _ = Describe("The rejection log", func() {
	var (
		clock *support.Clock
		log   *rejections.Log
		r     *receiver
	)

	BeforeEach(func() {
		store, err := rejectionstore.New(pool)
		Expect(err).NotTo(HaveOccurred())
		clock = support.NewClock()
		log, err = rejections.New(rejections.Config{MaxKeys: 5}, store, clock, support.Logger{})
		Expect(err).NotTo(HaveOccurred())
		r = newReceiver(receiverOptions{rejected: log})
	})

	It("counts every refused request per minute by provider, connection when known, and reason", func(ctx SpecContext) {
		ws := createWorkspace(ctx, "acme")
		lab := createConnection(ctx, conn{Workspace: ws, Kind: kindLab, Secret: "lab-secret"})
		body := hubBody{Event: "Issue Hook", Resources: []hubResource{{Type: "project", ID: "42"}}}

		for range 3 {
			Expect(r.deliverTo(lab, "wrong-secret", "g-1", body).status).To(Equal(http.StatusUnauthorized))
		}
		Expect(r.deliverTo(lab+1000, "lab-secret", "g-2", body).status).To(Equal(http.StatusNotFound))
		res := r.post("/webhooks/testhub", nil, map[string]string{headerSignature: "sha256=00"})
		Expect(res.status).To(BeNumerically(">=", 400))
		Expect(logged(ctx)).To(BeEmpty(), "nothing is written before the minute is flushed")

		clock.Advance(time.Minute)
		Expect(log.Flush(ctx, false)).To(Succeed())
		got := logged(ctx)
		Expect(got).To(HaveKeyWithValue([3]any{testLab.String(), lab, "bad-signature"}, int64(3)), "the fake verifier's reason")
		Expect(got).To(HaveKeyWithValue([3]any{testLab.String(), int64(0), admission.ReasonNotFound}, int64(1)),
			"an id no connection has is counted as no connection")
		var hubRefusals int64
		for k, n := range got {
			if k[0] == testHub.String() {
				Expect(k[1]).To(Equal(int64(0)))
				hubRefusals += n
			}
		}
		Expect(hubRefusals).To(Equal(int64(1)))
	})

	It("turns a flood of refused requests into one write per minute and key, with bounded keys", func(ctx SpecContext) {
		ws := createWorkspace(ctx, "acme")
		var conns []int64
		for range 8 {
			conns = append(conns, createConnection(ctx, conn{Workspace: ws, Kind: kindLab, Secret: "lab-secret"}))
		}
		body := hubBody{Event: "Issue Hook", Resources: []hubResource{{Type: "project", ID: "42"}}}
		before := insertedRejectionRows(ctx)
		for i := range 200 {
			Expect(r.deliverTo(conns[i%len(conns)], "forged", "g", body).status).To(Equal(http.StatusUnauthorized))
		}
		Expect(insertedRejectionRows(ctx)).To(Equal(before), "no write per request")
		Expect(log.Keys()).To(Equal(5+1), "five keys, then everything else under connection 0")

		clock.Advance(time.Minute)
		Expect(log.Flush(ctx, false)).To(Succeed())
		Expect(insertedRejectionRows(ctx)-before).To(BeEquivalentTo(6), "one row written per key")
		var total int64
		for _, n := range logged(ctx) {
			total += n
		}
		Expect(total).To(Equal(int64(200)), "no refusal lost")
		Expect(log.Keys()).To(BeZero())
	})

	It("lists a refusal within 10 s of its answer, summed into its minute's one row", func(ctx SpecContext) {
		ws := createWorkspace(ctx, "acme")
		lab := createConnection(ctx, conn{Workspace: ws, Kind: kindLab, Secret: "lab-secret"})
		body := hubBody{Event: "Issue Hook", Resources: []hubResource{{Type: "project", ID: "42"}}}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = log.Run(runCtx)
		}()
		DeferCleanup(func() { stop(); Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed()) })

		// The spec's clock stays in one minute: nothing but the runner's own period writes. It
		// follows the wall clock, so the spec starts at least 30 s before the minute ends (the two
		// refusals and their waits take at most about 20 s).
		if left := time.Minute - clock.Now().Sub(clock.Now().Truncate(time.Minute)); left < 30*time.Second {
			clock.Advance(left + time.Second)
		}
		refusals := map[[3]any]int64{}
		for _, n := range []int64{1, 2} {
			Expect(r.deliverTo(lab, "wrong-secret", "g-1", body).status).To(Equal(http.StatusUnauthorized))
			refusals[[3]any{testLab.String(), lab, "bad-signature"}] = n
			Eventually(logged).WithArguments(ctx).WithTimeout(10 * time.Second).Should(Equal(refusals))
		}
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM webhook_rejection`)).To(Equal(1), "one row per minute and key")
	})

	It("keeps a minute for the retention, and counts of the current minute until it ends", func(ctx SpecContext) {
		store, err := rejectionstore.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.AddRejections(ctx, []ports.RejectionCount{
			{Minute: clock.Now().Add(-8 * 24 * time.Hour).Truncate(time.Minute), Provider: "GITLAB", Reason: "unverified", Count: 4},
			{Minute: clock.Now().Add(-6 * 24 * time.Hour).Truncate(time.Minute), Provider: "GITLAB", Reason: "unverified", Count: 2},
		}, time.Time{})).To(Succeed())
		log.Refused("GITLAB", 0, "unverified")
		Expect(log.Flush(ctx, false)).To(Succeed())
		Expect(logged(ctx)).To(Equal(map[[3]any]int64{{"GITLAB", int64(0), "unverified"}: 2}),
			"the 8-day-old minute is gone, the current minute not written yet")
		Expect(log.Flush(ctx, true)).To(Succeed())
		Expect(logged(ctx)).To(Equal(map[[3]any]int64{{"GITLAB", int64(0), "unverified"}: 3}))
	})
})
