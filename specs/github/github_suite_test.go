package github_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/handlers"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgtest"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

func TestGitHubMirror(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "GitHub mirror Suite")
}

var (
	db       *pgtest.Database
	pool     *pgxpool.Pool
	box      *deliveryinbox.Inbox
	store    *githubmirror.Store
	leakOpts []goleak.Option
	// deliveries numbers delivery keys and scopes, so rows never collide on the unique indexes.
	deliveries atomic.Int64
)

var _ = BeforeSuite(func(ctx SpecContext) {
	leakOpts = []goleak.Option{goleak.IgnoreCurrent()}
	var err error
	db, err = pgtest.NewDatabase(ctx)
	if errors.Is(err, pgtest.ErrNoCluster) {
		Skip(err.Error())
	}
	Expect(err).NotTo(HaveOccurred())
	pool, err = db.Pool(ctx, 6)
	Expect(err).NotTo(HaveOccurred())
	box, err = deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	store, err = githubmirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func(ctx SpecContext) {
	if db == nil {
		return
	}
	pool.Close()
	Expect(db.Drop(context.WithoutCancel(ctx))).To(Succeed())
	Expect(goleak.Find(leakOpts...)).To(Succeed())
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

// registry wires the GitHub handlers with deps (the real inbox and store unless replaced) into
// the consumer's registry, as the service does.
func registry(deps handlers.Deps) *consumer.Registry {
	GinkgoHelper()
	if deps.Inbox == nil {
		deps.Inbox = box
	}
	if deps.Store == nil {
		deps.Store = store
	}
	reg := consumer.NewRegistry()
	Expect(handlers.Register(reg, deps)).To(Succeed())
	return reg
}

// newWorkspace inserts a workspace and returns its id.
func newWorkspace(ctx context.Context, slug string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `INSERT INTO workspace (slug, name) VALUES ($1, $1) RETURNING id`, slug).Scan(&id)).To(Succeed())
	return id
}

// appConnection inserts a GitHub App connection of the installation in state.
func appConnection(ctx context.Context, ws, installationID int64, state string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
		VALUES ($1, 'GITHUB_APP', 'GITHUB', $2, 'https://github.com', jsonb_build_object('installationId', $3::bigint), $3::text)
		RETURNING id`, ws, state, installationID).Scan(&id)).To(Succeed())
	return id
}

// subscribe makes the workspace monitor a GitHub resource through the connection.
func subscribe(ctx context.Context, ws, connectionID int64, resourceType string, resourceID int64) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `
		INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id)
		VALUES ($1, $2, 'GITHUB', $3, $4)`, connectionID, ws, resourceType, strconv.FormatInt(resourceID, 10))
	Expect(err).NotTo(HaveOccurred())
}

func connectionState(ctx context.Context, id int64) string {
	GinkgoHelper()
	var s string
	Expect(pool.QueryRow(ctx, `SELECT state FROM connection WHERE id = $1`, id).Scan(&s)).To(Succeed())
	return s
}

// delivery is one stored row as a claimer holds it: LEASED under epoch.
type delivery struct {
	id    int64
	ws    int64 // 0: an installation row (NULL workspace)
	event string
	epoch inbox.Epoch
	body  []byte
}

// leased stores payload as a LEASED row of the workspace (0: the instance inbox) under epoch 1,
// as a claim leaves it. Each row gets its own scope, so several can be leased at once.
func leased(ctx context.Context, ws int64, event string, payload []byte) *delivery {
	GinkgoHelper()
	n := deliveries.Add(1)
	var wsArg *int64
	scope := fmt.Sprintf("installation:github:%d", n)
	if ws > 0 {
		wsArg = &ws
		scope = fmt.Sprintf("%d:github:spec:%d", ws, n)
	}
	d := &delivery{ws: ws, event: event, epoch: 1, body: payload}
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
			payload, state, attempt, lease_epoch, leased_until)
		VALUES ($1, 'GITHUB', $2, $3, $4, 'github:spec', $5::jsonb, 'LEASED', 1, 1, now() + interval '2 min')
		RETURNING id`, wsArg, event, fmt.Sprintf("delivery-%d", n), scope, string(payload)).Scan(&d.id)).To(Succeed())
	return d
}

// handle dispatches the row to its registered handler on a context bound to its lease, as the
// consumer does, and returns the handler's error.
func (d *delivery) handle(ctx context.Context, reg *consumer.Registry) error {
	GinkgoHelper()
	h, ok := reg.Lookup(github.Provider, d.event)
	Expect(ok).To(BeTrue(), "no handler for %s", d.event)
	fence, err := erasure.NewFence(d.id, d.epoch)
	Expect(err).NotTo(HaveOccurred())
	return h.Handle(ports.WithDispatch(ctx, fence), ports.Dispatch{
		Delivery: inbox.RestoreDelivery(inbox.Stored{
			ID: d.id, WorkspaceID: d.ws, Provider: github.Provider, EventType: d.event,
			State: inbox.Leased, Attempt: int(d.epoch), LeaseEpoch: d.epoch, LeasedUntil: time.Now().Add(2 * time.Minute),
		}),
		WorkspaceID: d.ws,
		Payload:     d.body,
	})
}

// retry is the next claim of the row after a failure: a new lease epoch, so the earlier
// attempt's lease can no longer write.
func (d *delivery) retry(ctx context.Context) {
	GinkgoHelper()
	var epoch int64
	Expect(pool.QueryRow(ctx,
		`UPDATE provider_event SET lease_epoch = lease_epoch + 1, attempt = attempt + 1 WHERE id = $1 RETURNING lease_epoch`,
		d.id).Scan(&epoch)).To(Succeed())
	d.epoch = inbox.Epoch(epoch)
}

// steps lists the committed step names of the row.
func (d *delivery) steps(ctx context.Context) []string {
	GinkgoHelper()
	rows, err := pool.Query(ctx, `SELECT step_name FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, d.id)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for rows.Next() {
		var s string
		Expect(rows.Scan(&s)).To(Succeed())
		out = append(out, s)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

// scalar reads one value.
func scalar[T any](ctx context.Context, sql string, args ...any) T {
	GinkgoHelper()
	var v T
	Expect(pool.QueryRow(ctx, sql, args...).Scan(&v)).To(Succeed())
	return v
}

// xmin is the transaction that last wrote a row: it changes whenever the row is rewritten,
// even with the same values, so an unchanged xmin proves a row was not written again.
func xmin(ctx context.Context, table, where string, args ...any) string {
	GinkgoHelper()
	return scalar[string](ctx, "SELECT xmin::text FROM "+table+" WHERE "+where, args...)
}
