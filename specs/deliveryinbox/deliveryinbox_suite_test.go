package deliveryinbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestDeliveryInbox(t *testing.T) {
	support.RunSpecs(t, "DeliveryInbox Suite")
}

// quick bounds every statement that must not wait for a lock: if it waited, it would end with
// a deadline error instead of its result.
const quick = 5 * time.Second

var (
	// handlerPool is the dispatching server's pool, used by the inbox under test.
	handlerPool *pgxpool.Pool
	// otherPool plays the rest of the world: another server's reaper and renewal, erasure, a
	// workspace operation, the next claimer.
	otherPool *pgxpool.Pool
	box       *deliveryinbox.Inbox
)

var _ = BeforeSuite(func(ctx SpecContext) {
	support.SkipWithoutCluster()
	db := support.Database(ctx)
	handlerPool = support.Pool(ctx, db, 10)
	otherPool = support.Pool(ctx, db, 4)
	var err error
	box, err = deliveryinbox.New(handlerPool)
	Expect(err).NotTo(HaveOccurred())
	// The business table the handler steps write into. n counts writes, so a step that ran
	// twice shows n = 2 instead of hiding behind the primary key.
	_, err = handlerPool.Exec(ctx, `CREATE TABLE spec_item (id text PRIMARY KEY, n int NOT NULL DEFAULT 1)`)
	Expect(err).NotTo(HaveOccurred())
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, handlerPool)).To(Succeed())
})

// leasedEvent inserts a workspace and one of its events, LEASED under epoch, as a claim leaves
// it, and returns the event id.
func leasedEvent(ctx context.Context, epoch inbox.Epoch) int64 {
	var id int64
	Expect(handlerPool.QueryRow(ctx, `
		WITH w AS (INSERT INTO workspace (slug, name) VALUES ('acme', 'Acme') RETURNING id)
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key,
			subject, payload, state, attempt, lease_epoch, leased_until)
		SELECT w.id, 'GITHUB', 'push', 'd-1', w.id || ':github:repository:1', 'github:repository:1',
			'{}'::jsonb, 'LEASED', 1, $1, now() + interval '2 min'
		FROM w
		RETURNING id`, int64(epoch)).Scan(&id)).To(Succeed())
	return id
}

// dispatchCtx is the handler's context as the consumer binds it for the claim of eventID under
// epoch.
func dispatchCtx(ctx context.Context, eventID int64, epoch inbox.Epoch) context.Context {
	claimed := ports.Claimed{Delivery: inbox.RestoreDelivery(inbox.Stored{
		ID: eventID, State: inbox.Leased, LeaseEpoch: epoch, LeasedUntil: time.Now().Add(2 * time.Minute),
	})}
	return dispatch.BindDispatch(ctx, claimed)
}

// nextClaim gives the row a new lease epoch with a plain UPDATE on the other pool, which does
// not wait for a step's key-share lock (it is a NO KEY UPDATE). The store's own reaper and claim
// cannot do that while a step holds the row (they skip it, see "Erasure and contention"): this
// is the interleaving the commit-time recheck backstops. takeOver is the store's own way.
func nextClaim(ctx context.Context, eventID int64) inbox.Epoch {
	ctx, cancel := context.WithTimeout(ctx, quick)
	defer cancel()
	var epoch int64
	Expect(otherPool.QueryRow(ctx,
		`UPDATE provider_event SET lease_epoch = lease_epoch + 1 WHERE id = $1 RETURNING lease_epoch`,
		eventID).Scan(&epoch)).To(Succeed())
	return inbox.Epoch(epoch)
}

// writeItem is a mirror store's upsert, written through the inbox's transaction.
func writeItem(ctx context.Context, tx ports.Tx, id string) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	_, err = ptx.Exec(ctx,
		`INSERT INTO spec_item (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET n = spec_item.n + 1`, id)
	return err
}

// items maps each committed spec_item to how many times it was written.
func items(ctx context.Context) map[string]int {
	rows, err := otherPool.Query(ctx, `SELECT id, n FROM spec_item`)
	Expect(err).NotTo(HaveOccurred())
	got := map[string]int{}
	for rows.Next() {
		var (
			id string
			n  int
		)
		Expect(rows.Scan(&id, &n)).To(Succeed())
		got[id] = n
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return got
}

// stepRows lists the committed step names of eventID.
func stepRows(ctx context.Context, eventID int64) []string {
	return support.Column(ctx, otherPool,
		`SELECT step_name FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, eventID)
}

// holdLock opens a transaction on the other pool that runs lockSQL and keeps its lock until the
// spec ends (or release is called).
func holdLock(ctx context.Context, lockSQL string, args ...any) (release func()) {
	tx, err := otherPool.Begin(ctx)
	Expect(err).NotTo(HaveOccurred())
	rows, err := tx.Query(ctx, lockSQL, args...)
	Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	done := false
	release = func() {
		if !done {
			done = true
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}
	DeferCleanup(release)
	return release
}

// step is a fixed, valid step name for specs that need one.
var step = inbox.MustStep("spec.write")

// leaseState is the lease of an event row as another server sees it.
type leaseState struct {
	State string
	Epoch int64
}

// leaseOf reads eventID's state and lease epoch on the other pool.
func leaseOf(ctx context.Context, eventID int64) leaseState {
	var l leaseState
	Expect(otherPool.QueryRow(ctx, `SELECT state, lease_epoch FROM provider_event WHERE id = $1`, eventID).
		Scan(&l.State, &l.Epoch)).To(Succeed())
	return l
}

// takeOver does to the row what another server does once its lease ran out, with the inbox
// store's own statements: its reaper (a clock past the lease) hands the row back, and its claim
// leases it under the next epoch, which it returns.
func takeOver(ctx context.Context, eventID int64) inbox.Epoch {
	GinkgoHelper()
	clock := support.NewClock()
	clock.Advance(3 * time.Minute) // past leasedEvent's 2-minute lease
	other, err := inboxstore.New(otherPool, inboxstore.Config{Clock: clock})
	Expect(err).NotTo(HaveOccurred())
	policy, err := inbox.NewRetryPolicy(time.Millisecond, time.Millisecond, 10)
	Expect(err).NotTo(HaveOccurred())
	reaped, err := other.Reap(ctx, policy, 10)
	Expect(err).NotTo(HaveOccurred())
	Expect(reaped).To(HaveLen(1))
	clock.Advance(time.Second) // past the retry's due time
	claimed, err := other.Claim(ctx, "other-server", 1, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(claimed).To(HaveLen(1))
	Expect(claimed[0].Delivery.ID()).To(Equal(eventID))
	return claimed[0].Delivery.Lease().Epoch()
}
