package support

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Delivery is one provider_event row as a claimer holds it: LEASED, its handler not yet run.
type Delivery struct {
	ID        int64
	Workspace int64 // 0: an installation row (NULL workspace)
	Provider  provider.Provider
	EventType string
	Payload   string // the JSON body the handler receives
	pool      *pgxpool.Pool
}

// deliveries numbers delivery keys and scopes, so rows never collide on the unique indexes.
var deliveries atomic.Int64

// LeasedEvent stores payload as a row of workspace ws (0: an installation row) of the provider's
// eventType about subject, LEASED under epoch 1 at attempt 1 as a claim leaves it. Each row gets
// a delivery key and a scope of its own, so a spec can hold several LEASED rows of one subject at
// once (the leased-scope index allows one per scope); the spec itself decides their order.
func LeasedEvent(ctx context.Context, pool *pgxpool.Pool, ws int64, p provider.Provider, eventType, subject, payload string) Delivery {
	ginkgo.GinkgoHelper()
	key := fmt.Sprintf("d-%d", deliveries.Add(1))
	var wsArg *int64
	scope := fmt.Sprintf("installation:%s:%s", subject, key)
	if ws != 0 {
		wsArg = &ws
		scope = fmt.Sprintf("%d:%s:%s", ws, subject, key)
	}
	d := Delivery{Workspace: ws, Provider: p, EventType: eventType, Payload: payload, pool: pool}
	gomega.Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, state, attempt, lease_epoch, leased_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, 'LEASED', 1, 1, now() + interval '2 min')
		RETURNING id`,
		wsArg, p.String(), eventType, key, scope, subject, payload).Scan(&d.ID)).To(gomega.Succeed())
	return d
}

// Dispatch is what the consumer hands the row's handler under the row's current lease: a
// context bound to the lease (the dispatch identity the step runner fences writes with) and the
// dispatch itself.
func (d Delivery) Dispatch(ctx context.Context) (context.Context, ports.Dispatch) {
	ginkgo.GinkgoHelper()
	var (
		epoch   int64
		attempt int
	)
	gomega.Expect(d.pool.QueryRow(ctx, `SELECT lease_epoch, attempt FROM provider_event WHERE id = $1`, d.ID).
		Scan(&epoch, &attempt)).To(gomega.Succeed())
	fence, err := erasure.NewFence(d.ID, inbox.Epoch(epoch))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return dispatch.WithDispatch(ctx, fence), ports.Dispatch{
		Delivery: inbox.RestoreDelivery(inbox.Stored{
			ID: d.ID, WorkspaceID: d.Workspace, Provider: d.Provider, EventType: d.EventType,
			State: inbox.Leased, Attempt: attempt, LeaseEpoch: inbox.Epoch(epoch), LeasedUntil: time.Now().Add(2 * time.Minute),
		}),
		WorkspaceID: d.Workspace,
		Payload:     json.RawMessage(d.Payload),
	}
}

// Handle runs the handler reg has for the row's provider and event type, as the consumer does
// under the row's current lease, and returns the handler's error.
func (d Delivery) Handle(ctx context.Context, reg ports.HandlerRegistry) error {
	ginkgo.GinkgoHelper()
	h, ok := reg.Lookup(d.Provider, d.EventType)
	gomega.Expect(ok).To(gomega.BeTrue(), "no handler for %s %q", d.Provider, d.EventType)
	return h.Handle(d.Dispatch(ctx))
}

// NextLease does what a failed attempt and the next claim do to the row: a new lease epoch and
// attempt, so the earlier attempt's lease can no longer write. It returns the new epoch.
func (d Delivery) NextLease(ctx context.Context) inbox.Epoch {
	ginkgo.GinkgoHelper()
	var epoch int64
	gomega.Expect(d.pool.QueryRow(ctx,
		`UPDATE provider_event SET lease_epoch = lease_epoch + 1, attempt = attempt + 1 WHERE id = $1 RETURNING lease_epoch`,
		d.ID).Scan(&epoch)).To(gomega.Succeed())
	return inbox.Epoch(epoch)
}

// Steps lists the names of the row's committed steps, in name order (empty, not nil, for none).
func (d Delivery) Steps(ctx context.Context) []string {
	ginkgo.GinkgoHelper()
	return Column(ctx, d.pool, `SELECT step_name FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, d.ID)
}

// Workspace inserts an ACTIVE workspace named slug, without the management use case, and returns
// its id.
func Workspace(ctx context.Context, pool *pgxpool.Pool, slug string) int64 {
	ginkgo.GinkgoHelper()
	return Scalar[int64](ctx, pool, `INSERT INTO workspace (slug, name) VALUES ($1, $1) RETURNING id`, slug)
}

// Scalar reads the one value sql returns.
func Scalar[T any](ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) T {
	ginkgo.GinkgoHelper()
	var v T
	gomega.Expect(pool.QueryRow(ctx, sql, args...).Scan(&v)).To(gomega.Succeed())
	return v
}

// Count reads the count(*) (or any integer) sql returns.
func Count(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) int {
	ginkgo.GinkgoHelper()
	return Scalar[int](ctx, pool, sql, args...)
}

// Column reads the first column of every row sql returns as text (empty, not nil, for none).
func Column(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) []string {
	ginkgo.GinkgoHelper()
	rows, err := pool.Query(ctx, sql, args...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if out == nil {
		out = []string{}
	}
	return out
}
