package github_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestGitHubMirror(t *testing.T) {
	support.RunSpecs(t, "GitHub mirror Suite")
}

var (
	pool  *pgxpool.Pool
	box   *deliveryinbox.Inbox
	store *githubmirror.Store
)

// harness runs the GitHub mirror store on the real inbox, and the GitHub read API.
var harness = support.NewHarness(support.HarnessConfig{
	Provider: github.Provider,
	MaxConns: 6,
	Setup: func(ctx context.Context, h *support.Harness) {
		pool, box = h.Pool, h.Inbox
		var err error
		store, err = githubmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		h.ServeRead(func(engine *gin.Engine) error {
			return githubread.Register(engine, githubread.Config{Auth: h.Management, Members: h.Workspaces, Reader: store, Log: support.Logger{}})
		})
	},
})

// registry wires the GitHub handlers with deps (the real inbox and store unless replaced) into
// the consumer's registry, as the service does.
func registry(deps githubhandlers.Deps) *consumer.Registry {
	GinkgoHelper()
	if deps.Inbox == nil {
		deps.Inbox = box
	}
	if deps.Store == nil {
		deps.Store = store
	}
	reg := consumer.NewRegistry()
	Expect(githubhandlers.Register(reg, deps)).To(Succeed())
	return reg
}

// newWorkspace inserts a workspace and returns its id.
func newWorkspace(ctx context.Context, slug string) int64 {
	GinkgoHelper()
	return support.Workspace(ctx, pool, slug)
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

// delivery is one stored row as a claimer holds it: LEASED.
type delivery struct{ support.Delivery }

// leased stores payload as a LEASED row of the workspace (0: the instance inbox) under epoch 1,
// as a claim leaves it. Each row gets its own scope, so several can be leased at once.
func leased(ctx context.Context, ws int64, event string, payload []byte) *delivery {
	GinkgoHelper()
	return &delivery{support.LeasedEvent(ctx, pool, ws, github.Provider, event, "github:spec", string(payload))}
}

// handle dispatches the row to its registered handler on a context bound to its lease, as the
// consumer does, and returns the handler's error.
func (d *delivery) handle(ctx context.Context, reg *consumer.Registry) error {
	GinkgoHelper()
	return d.Handle(ctx, reg)
}

// retry is the next claim of the row after a failure: a new lease epoch, so the earlier
// attempt's lease can no longer write.
func (d *delivery) retry(ctx context.Context) {
	GinkgoHelper()
	d.NextLease(ctx)
}

// steps lists the committed step names of the row.
func (d *delivery) steps(ctx context.Context) []string {
	GinkgoHelper()
	return d.Steps(ctx)
}

// scalar reads one value.
func scalar[T any](ctx context.Context, sql string, args ...any) T {
	GinkgoHelper()
	return support.Scalar[T](ctx, pool, sql, args...)
}

// xmin is the transaction that last wrote a row: it changes whenever the row is rewritten,
// even with the same values, so an unchanged xmin proves a row was not written again.
func xmin(ctx context.Context, table, where string, args ...any) string {
	GinkgoHelper()
	return scalar[string](ctx, "SELECT xmin::text FROM "+table+" WHERE "+where, args...)
}
