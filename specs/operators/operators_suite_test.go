package operators_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deadletterstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/rejectionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/replayjobs"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestOperators(t *testing.T) {
	support.RunSpecs(t, "Operators: dead letters, inbox overview, person erasure, alert rules")
}

// adminToken is the configured instance administrator token of the server under test.
const adminToken = "spec-instance-admin-token-0123456789"

// The bulk replay limits of the server under test: the contract's default of running jobs, and
// a rows limit the largest replay spec (2,000 rows) stays under.
const (
	replayMaxRunning = 2
	replayMaxRows    = 2500
)

// quick bounds what must not wait; settle bounds background work (the erasure runner).
const (
	quick  = 2 * time.Second
	settle = 15 * time.Second
)

var (
	// pool is the server's; other is a second "process" (admission, handlers' fenced writes),
	// so its transactions can hold locks while the server works.
	pool, other *pgxpool.Pool
	svc         *management.Service
	inboxStore  *inboxstore.Store
	erasures    *erasurestore.Store
	runner      *personerasure.Runner
	box         *deliveryinbox.Inbox
	server      *httptest.Server
	client      *http.Client
	wakes       *countingNotifier
	// replayStore is the bulk replay store on the server's pool; replayWakes stands in for the
	// server's replay runner, which no spec runs unless it starts one (replays_test.go).
	replayStore *replayjobs.Store
	replayWakes *countingNotifier

	// replayProviders are the providers the server under test runs (the only ones a replay
	// filter may name).
	replayProviders = []provider.Provider{githubProvider, provider.MustNew("GITLAB"), provider.MustNew("SLACK"), provider.MustNew("OUTLINE")}

	stopRunner context.CancelFunc
	runnerDone chan struct{}
	// reads is the server's limit of operator reads per account (readsPerAccount).
	reads *operatorapi.ReadLimit
)

// readsPerAccount is the server's limit of operator reads one account has in flight, the
// default of HEPHAESTUS_OPERATOR_READS_PER_ACCOUNT.
const readsPerAccount = bootstrap.DefaultOperatorReadsPerAcct

var _ = BeforeSuite(func(ctx SpecContext) {
	db := support.Database(ctx)
	pool = support.Pool(ctx, db, 12)
	other = support.Pool(ctx, db, 6)
	var workspaces *managementstore.Workspaces
	svc, workspaces = support.Management(pool, adminToken)

	var err error
	inboxStore, err = inboxstore.New(pool, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
	reader, err := deadletterstore.New(pool)
	Expect(err).NotTo(HaveOccurred())
	wakes = &countingNotifier{}
	dead, err := deadletters.New(reader, inboxStore, wakes, support.Providers())
	Expect(err).NotTo(HaveOccurred())
	browser, err := deliveries.New(reader, support.Providers())
	Expect(err).NotTo(HaveOccurred())

	erasures = support.ErasureStore(pool)
	runner, err = personerasure.NewRunner(personerasure.RunnerConfig{}, erasures, support.Logger{})
	Expect(err).NotTo(HaveOccurred())
	erasureSvc, err := personerasure.New(erasures, runner)
	Expect(err).NotTo(HaveOccurred())
	box, err = deliveryinbox.New(other)
	Expect(err).NotTo(HaveOccurred())

	// The runner works in the background as on a server; specs wait for its outcome.
	var runCtx context.Context
	runCtx, stopRunner = context.WithCancel(context.Background())
	runnerDone = make(chan struct{})
	go func() {
		defer close(runnerDone)
		_ = runner.Run(runCtx)
	}()

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	managementapi.Register(engine, svc, support.Logger{})
	reads, err = operatorapi.NewReadLimit(readsPerAccount)
	Expect(err).NotTo(HaveOccurred())
	operatorapi.Register(engine, svc, dead, erasureSvc, reads, support.Logger{})
	operatorapi.RegisterDeliveries(engine, svc, workspaces, browser, reads, support.Logger{})
	rejectionStore, err := rejectionstore.New(pool)
	Expect(err).NotTo(HaveOccurred())
	rejected, err := rejections.NewService(rejectionStore)
	Expect(err).NotTo(HaveOccurred())
	operatorapi.RegisterRejections(engine, svc, workspaces, rejected, reads, support.Logger{})
	replayStore, err = replayjobs.New(pool, replayjobs.Config{})
	Expect(err).NotTo(HaveOccurred())
	replayWakes = &countingNotifier{}
	bulk, err := replays.NewService(replays.ServiceConfig{Providers: replayProviders, MaxRunning: replayMaxRunning, MaxRows: replayMaxRows},
		replayStore, replayWakes)
	Expect(err).NotTo(HaveOccurred())
	operatorapi.RegisterReplays(engine, svc, workspaces, bulk, support.Logger{})
	server, client = support.Serve(engine)
})

// The runner stops before the server, the pools and the database that support closes after
// every AfterSuite.
var _ = AfterSuite(func() {
	if stopRunner != nil {
		stopRunner()
		<-runnerDone
	}
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

// countingNotifier stands in for the claimers' wake signal.
type countingNotifier struct {
	mu sync.Mutex
	n  int
}

func (c *countingNotifier) Notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func (c *countingNotifier) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

var _ ports.Notifier = (*countingNotifier)(nil)

// response is one answer of the API under test.
type response = support.Answer

// call sends body (nil: none; otherwise JSON) with token as bearer ("" for none).
func call(method, path, token string, body any) response {
	GinkgoHelper()
	return support.API{URL: server.URL, Client: client}.Call(method, path, token, body)
}
