package support

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// AdminToken is the configured instance administrator token of a Harness's management use case.
const AdminToken = "spec-instance-admin-token-0123456789"

// NoDatabase labels a spec that reads no table: the harness does not empty the tables before it.
const NoDatabase = "no-database"

// HarnessConfig is what a spec package's Harness is made of.
type HarnessConfig struct {
	// Provider is the provider of the rows Leased stores (zero: the package leases none).
	Provider provider.Provider
	// MaxConns bounds the suite's pool (default 8).
	MaxConns int32
	// Setup builds the package's own pieces on the harness once, in BeforeSuite, after the
	// database, the inbox, the registry and the management use case exist: its stores, its
	// handlers in h.Registry, its read API through h.ServeRead.
	Setup func(ctx context.Context, h *Harness)
	// Reset runs before every spec, after the tables were emptied (nil: nothing more).
	Reset func()
}

// Harness is the whole-server set-up one spec package shares across its specs, as the service
// composes it: the suite's own database and pool, the real delivery inbox, the consumer's
// handler registry, the management use case with its workspace store (the read APIs' member
// directory) and, once ServeRead ran, the read API on a local server. Every spec starts from
// empty tables. Its fields are set in BeforeSuite.
type Harness struct {
	Pool       *pgxpool.Pool
	Inbox      *deliveryinbox.Inbox
	Registry   *consumer.Registry
	Management *management.Service
	Workspaces *managementstore.Workspaces
	// Server and Client serve the read API (nil until ServeRead).
	Server *httptest.Server
	Client *http.Client
	cfg    HarnessConfig
}

// NewHarness declares the suite's BeforeSuite (which builds the harness, then runs cfg.Setup)
// and BeforeEach (which empties every table, then runs cfg.Reset; a spec labelled NoDatabase
// skips both). Call it once, at package
// level: `var harness = support.NewHarness(support.HarnessConfig{…})`.
func NewHarness(cfg HarnessConfig) *Harness {
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 8
	}
	h := &Harness{cfg: cfg}
	ginkgo.BeforeSuite(func(ctx ginkgo.SpecContext) {
		SkipWithoutCluster()
		h.Pool = Pool(ctx, Database(ctx), cfg.MaxConns)
		var err error
		h.Inbox, err = deliveryinbox.New(h.Pool)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		h.Registry = consumer.NewRegistry()
		h.Management, h.Workspaces = Management(h.Pool, AdminToken)
		if cfg.Setup != nil {
			cfg.Setup(ctx, h)
		}
	})
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		if slices.Contains(ginkgo.CurrentSpecReport().Labels(), NoDatabase) {
			return
		}
		gomega.Expect(pgtest.Truncate(ctx, h.Pool)).To(gomega.Succeed())
		if cfg.Reset != nil {
			cfg.Reset()
		}
	})
	return h
}

// ServeRead registers routes (a read API's Register with its Config) on a gin engine in test
// mode and serves it on the harness's server.
func (h *Harness) ServeRead(register func(engine *gin.Engine) error) {
	ginkgo.GinkgoHelper()
	gin.SetMode(gin.TestMode)
	engine := gin.New()
	gomega.Expect(register(engine)).To(gomega.Succeed())
	h.Server, h.Client = Serve(engine)
}

// NewWorkspace creates the workspace slug as the instance administrator and returns its id.
func (h *Harness) NewWorkspace(ctx context.Context, slug string) int64 {
	ginkgo.GinkgoHelper()
	return NewWorkspace(ctx, h.Management, slug).ID
}

// NewAccount creates an account and returns its token; role ("ADMIN", "MEMBER" or "") makes it
// a member of the workspace slug.
func (h *Harness) NewAccount(ctx context.Context, login, slug, role string) string {
	ginkgo.GinkgoHelper()
	return NewAccount(ctx, h.Management, login, false, slug, role).Token
}

// Get sends GET path to the read API with token as the bearer ("" for none).
func (h *Harness) Get(path, token string) Response {
	ginkgo.GinkgoHelper()
	return GetJSON(h.Client, h.Server.URL+path, token)
}

// Column reads the first column of every row sql returns as text.
func (h *Harness) Column(ctx context.Context, sql string, args ...any) []string {
	ginkgo.GinkgoHelper()
	return Column(ctx, h.Pool, sql, args...)
}

// Leased stores payload as a row of the harness's provider for workspace ws, LEASED under epoch
// 1 as a claim leaves it, in a scope of its own (LeasedEvent), to be handled by h.Registry.
func (h *Harness) Leased(ctx context.Context, ws int64, eventType, subject, payload string) Leased {
	ginkgo.GinkgoHelper()
	return Leased{Delivery: LeasedEvent(ctx, h.Pool, ws, h.cfg.Provider, eventType, subject, payload), registry: h.Registry}
}

// Leased is a LEASED row with the registry that handles it.
type Leased struct {
	Delivery
	registry ports.HandlerRegistry
}

// Attempt runs the row's handler as the consumer does under the row's current lease epoch.
func (l Leased) Attempt(ctx context.Context) error {
	ginkgo.GinkgoHelper()
	return l.Handle(ctx, l.registry)
}

// ReleaseForRetry does what a failed attempt and the next claim do to the row: a new lease
// epoch, which fences the retry's writes.
func (l Leased) ReleaseForRetry(ctx context.Context) {
	ginkgo.GinkgoHelper()
	l.NextLease(ctx)
}
