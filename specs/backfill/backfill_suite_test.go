package backfill_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubsync"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/http/syncapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestBackfill(t *testing.T) {
	support.RunSpecs(t, "Backfill sync and teardown Suite")
}

// Two "servers": each has its own pool, job store, mirror store and runner on one database.
var (
	db            *pgtest.Database
	pool, poolB   *pgxpool.Pool
	box           *secrets.AESGCM
	mirror        *githubmirror.Store
	jobs, jobsB   *syncjobs.Store
	manage        *management.Service
	members       *managementstore.Workspaces
	patToken      = "ghp_spec_token"
	testRetry     = syncjob.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	adminToken    = "spec-admin-token"
	specLeaseTime = 20 * time.Second
)

var _ = BeforeSuite(func(ctx SpecContext) {
	support.SkipWithoutCluster()
	db = support.Database(ctx)
	pool = support.Pool(ctx, db, 8)
	poolB = support.Pool(ctx, db, 4)
	box = support.SecretBox()
	var err error
	mirror, err = githubmirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
	jobs, err = syncjobs.New(pool, syncjobs.Config{})
	Expect(err).NotTo(HaveOccurred())
	jobsB, err = syncjobs.New(poolB, syncjobs.Config{})
	Expect(err).NotTo(HaveOccurred())
	manage, members = support.Management(pool, adminToken)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

// server is one server's runner against the fake GitHub, with its own pool and metrics.
type server struct {
	runner  *backfill.Runner
	metrics *telemetry.Metrics
}

func newServer(owner string, p *pgxpool.Pool, store *syncjobs.Store, gh *fakeGitHub) server {
	GinkgoHelper()
	secretsStore, err := managementstore.NewLiveSecrets(p, box)
	Expect(err).NotTo(HaveOccurred())
	m, err := githubmirror.New(p)
	Expect(err).NotTo(HaveOccurred())
	// The mirror publishes to the change feed, as the service wires it (a teardown removes the
	// torn-down changes' data and publishes connection.torn_down).
	feed, err := changefeed.New(p, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(m.PublishChanges(feed, githubread.Views{})).To(Succeed())
	creds := &githubapi.Credentials{Store: secretsStore}
	client, err := githubapi.New(githubapi.Config{BaseURL: gh.URL(), Token: creds.Token})
	Expect(err).NotTo(HaveOccurred())
	src, err := githubsync.New(client, m)
	Expect(err).NotTo(HaveOccurred())
	metrics := declaredMetrics("github", "gitlab", "slack", "outline")
	r := newRunner(owner, store, metrics, src)
	return server{runner: r, metrics: metrics}
}

type clock struct{}

func (clock) Now() time.Time { return time.Now() }

// patConnection inserts an ACTIVE GITHUB_PAT connection of ws whose secret is the fake's token.
func patConnection(ctx context.Context, ws int64, token string) int64 {
	GinkgoHelper()
	return patConnectionSealedBy(ctx, box, ws, token)
}

// patConnectionSealedBy is patConnection with the secret sealed by sealer.
func patConnectionSealedBy(ctx context.Context, sealer *secrets.AESGCM, ws int64, token string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config)
		VALUES ($1, 'GITHUB_PAT', 'GITHUB', 'ACTIVE', 'https://github.com', '{"login":"spec"}') RETURNING id`, ws).Scan(&id)).To(Succeed())
	sealed, err := sealer.Seal(id, []byte(token))
	Expect(err).NotTo(HaveOccurred())
	_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, id, sealed)
	Expect(err).NotTo(HaveOccurred())
	return id
}

// subscribe adds a VERIFIED repository subscription, as PUT …/subscriptions stores one.
func subscribe(ctx context.Context, ws, conn, repoID int64, name string) {
	GinkgoHelper()
	subscribeResource(ctx, ws, conn, "GITHUB", "repository", strconv.FormatInt(repoID, 10), name)
}

// subscribeResource adds a VERIFIED subscription of the provider's resource (its trigger
// queues the backfill).
func subscribeResource(ctx context.Context, ws, conn int64, provider, resourceType, id, name string) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `
		INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
		VALUES ($1, $2, $3, $4, $5, $6)`, conn, ws, provider, resourceType, id, name)
	Expect(err).NotTo(HaveOccurred())
}

type jobRow struct {
	State     string
	Items     int64
	Pages     int64
	Attempt   int
	LastError *string
	Cursor    *string
}

func job(ctx context.Context, conn, repoID int64) jobRow {
	GinkgoHelper()
	return resourceJob(ctx, conn, "", strconv.FormatInt(repoID, 10))
}

// resourceJob is the connection's backfill job of the resource (any type when resourceType is
// empty).
func resourceJob(ctx context.Context, conn int64, resourceType, id string) jobRow {
	GinkgoHelper()
	var j jobRow
	Expect(pool.QueryRow(ctx, `
		SELECT state, items, pages, attempt, last_error, cursor FROM sync_job
		WHERE connection_id = $1 AND kind = 'BACKFILL' AND ($2 = '' OR resource_type = $2) AND resource_id = $3`,
		conn, resourceType, id).
		Scan(&j.State, &j.Items, &j.Pages, &j.Attempt, &j.LastError, &j.Cursor)).To(Succeed())
	return j
}

func count(ctx context.Context, sql string, args ...any) int {
	GinkgoHelper()
	return support.Count(ctx, pool, sql, args...)
}

// drainUntil runs the server's due jobs until cond holds (a retried page is due again after
// its short spec backoff).
func drainUntil(ctx context.Context, s server, cond func() bool) {
	GinkgoHelper()
	drainRunner(ctx, s.runner, cond)
}

// drainRunner runs r's due jobs until cond holds.
func drainRunner(ctx context.Context, r *backfill.Runner, cond func() bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) bool {
		g.Expect(r.Drain(ctx)).To(Succeed())
		return cond()
	}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
}

// api is the sync routes and the GitHub read API behind a server checked against the API
// document.
func api() (base string, client *httpClient) {
	GinkgoHelper()
	srv, c := serve(
		syncRoutes(),
		func(e *gin.Engine) error {
			return githubread.Register(e, githubread.Config{Auth: manage, Members: members, Reader: mirror, Log: support.Logger{}})
		},
	)
	return srv.URL, &httpClient{c}
}

// declaredMetrics is a metrics registry with the sync series of providers declared at 0, as the
// service declares its providers' at start.
func declaredMetrics(providers ...string) *telemetry.Metrics {
	metrics := telemetry.NewMetrics()
	metrics.Declare(telemetry.Labels{Providers: providers})
	return metrics
}

// newRunner is the backfill runner of server owner over jobs and src, with the specs' lease
// time, call timeout and retry policy.
func newRunner(owner string, jobs ports.SyncJobStore, metrics ports.SyncMetrics, src contract.SyncSource) *backfill.Runner {
	GinkgoHelper()
	r, err := backfill.New(backfill.Config{Owner: owner, LeaseDuration: specLeaseTime, CallTimeout: 5 * time.Second,
		Retry: testRetry}, jobs, []contract.SyncSource{src}, metrics, support.Logger{}, clock{})
	Expect(err).NotTo(HaveOccurred())
	return r
}

// runUntilHeld starts run (one claim of a runner, as a server's loop makes it) in the
// background and returns once the fake API holds the page the job reads (held is closed); the
// channel it returns is closed when run ended, which must succeed.
func runUntilHeld(ctx context.Context, held chan struct{}, run func(context.Context) (bool, error)) chan struct{} {
	GinkgoHelper()
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		_, err := run(ctx)
		Expect(err).NotTo(HaveOccurred())
	}()
	Eventually(held).WithContext(ctx).Should(BeClosed())
	return done
}

// handlers is a registry with one provider's handlers, registered by register on the real inbox
// of the suite's pool, as the consumer of a server holds them.
func handlers(register func(reg *consumer.Registry, box *deliveryinbox.Inbox) error) *consumer.Registry {
	GinkgoHelper()
	box, err := deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	reg := consumer.NewRegistry()
	Expect(register(reg, box)).To(Succeed())
	return reg
}

// githubHandlers, gitlabHandlers, slackHandlers and outlineHandlers are a registry with the
// provider's webhook handlers writing to store (handlers).
func githubHandlers(store *githubmirror.Store) *consumer.Registry {
	return handlers(func(reg *consumer.Registry, box *deliveryinbox.Inbox) error {
		return githubhandlers.Register(reg, githubhandlers.Deps{Inbox: box, Store: store})
	})
}

func gitlabHandlers(store *gitlabmirror.Store) *consumer.Registry {
	return handlers(func(reg *consumer.Registry, box *deliveryinbox.Inbox) error {
		return gitlabhandlers.Register(reg, gitlabhandlers.Deps{Inbox: box, Store: store})
	})
}

func slackHandlers(store *slackmirror.Store) *consumer.Registry {
	return handlers(func(reg *consumer.Registry, box *deliveryinbox.Inbox) error {
		return slackhandlers.Register(reg, slackhandlers.Deps{Inbox: box, Store: store})
	})
}

func outlineHandlers(store *outlinemirror.Store) *consumer.Registry {
	return handlers(func(reg *consumer.Registry, box *deliveryinbox.Inbox) error {
		return outlinehandlers.Register(reg, outlinehandlers.Deps{Inbox: box, Store: store})
	})
}

// serve registers routes (the sync API's and read APIs' Register with their Config) on one gin
// engine in test mode and serves it as support.Serve does.
func serve(register ...func(engine *gin.Engine) error) (*httptest.Server, *http.Client) {
	GinkgoHelper()
	gin.SetMode(gin.TestMode)
	engine := gin.New()
	for _, r := range register {
		Expect(r(engine)).To(Succeed())
	}
	return support.Serve(engine)
}

// syncRoutes registers the sync API on the suite's job store (for serve).
func syncRoutes() func(engine *gin.Engine) error {
	GinkgoHelper()
	svc, err := backfill.NewService(jobs, nil)
	Expect(err).NotTo(HaveOccurred())
	return func(e *gin.Engine) error {
		return syncapi.Register(e, syncapi.Config{Auth: manage, Members: members, Syncs: svc, Log: support.Logger{}})
	}
}
