package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/console"
	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/consolesession"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deadletterstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/rejectionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/replayjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackoauth"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestConsole(t *testing.T) {
	support.RunSpecs(t, "Operator console: sessions, CSRF, the same authorisation as the API, in a real browser")
}

const adminToken = "console-spec-admin-token-0123456789"

// traceURL is the operator's trace link template (HEPHAESTUS_TRACE_URL) the console is given.
const traceURL = "https://tempo.example.com/explore?trace={traceId}&view=timeline"

var (
	// replayStore is the bulk replay store of the console's replay page; no runner works its
	// jobs here, so specs run batches themselves.
	replayStore *replayjobs.Store
	// replayService is the bulk replay use case of the page, with the default running-jobs
	// limit and replayMaxRows.
	replayService *replays.Service
	pool          *pgxpool.Pool
	svc           *management.Service
	server        *httptest.Server
	feed          *changes.Feed
	// inboxStore claims and records attempts as the claimers do (the deliveries browser specs).
	inboxStore *inboxstore.Store
)

type noopNotifier struct{}

func (noopNotifier) Notify() {}

var _ = BeforeSuite(func(ctx SpecContext) {
	db := support.Database(ctx)
	pool = support.Pool(ctx, db, 8)
	svc, _ = support.Management(pool, adminToken)
	store, err := inboxstore.New(pool, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
	inboxStore = store
	reader, err := deadletterstore.New(pool)
	Expect(err).NotTo(HaveOccurred())
	dead, err := deadletters.New(reader, store, noopNotifier{}, support.Providers())
	Expect(err).NotTo(HaveOccurred())
	browser, err := deliveries.New(reader, support.Providers())
	Expect(err).NotTo(HaveOccurred())
	rejectionStore, err := rejectionstore.New(pool)
	Expect(err).NotTo(HaveOccurred())
	rejected, err := rejections.NewService(rejectionStore)
	Expect(err).NotTo(HaveOccurred())
	erasures := support.ErasureStore(pool)
	runner, err := personerasure.NewRunner(personerasure.RunnerConfig{}, erasures, support.Logger{})
	Expect(err).NotTo(HaveOccurred())
	erasureSvc, err := personerasure.New(erasures, runner)
	Expect(err).NotTo(HaveOccurred())
	sessions, err := consolesession.New(pool)
	Expect(err).NotTo(HaveOccurred())
	feedStore, err := changefeed.New(pool, nil)
	Expect(err).NotTo(HaveOccurred())
	feed, err = changes.NewFeed(changes.Config{}, feedStore, changes.NewSignal(), telemetry.NewMetrics())
	Expect(err).NotTo(HaveOccurred())
	_, members := support.Management(pool, adminToken)
	// The sync use case of the sync API, on the real job table; no runner works the jobs here,
	// so a restarted job stays QUEUED for the specs to see.
	jobs, err := syncjobs.New(pool, syncjobs.Config{})
	Expect(err).NotTo(HaveOccurred())
	syncs, err := backfill.NewService(jobs, nil)
	Expect(err).NotTo(HaveOccurred())

	// The Slack install flow (its start calls no provider).
	states, err := managementstore.NewInstallStates(pool)
	Expect(err).NotTo(HaveOccurred())
	slackClient, err := slackoauth.New(slackoauth.Config{ClientID: "111.222", ClientSecret: "console-spec-slack-secret"})
	Expect(err).NotTo(HaveOccurred())
	installs, err := installflow.New(installflow.Config{StateKey: []byte("console-spec-install-state-key-0123456789")}, svc, states,
		[]contract.InstallFlow{slackoauth.NewFlow(slackoauth.FlowConfig{ClientID: "111.222"}, slackClient)}, &support.Clock{}, support.Logger{})
	Expect(err).NotTo(HaveOccurred())

	replayStore, err = replayjobs.New(pool, replayjobs.Config{})
	Expect(err).NotTo(HaveOccurred())
	bulk, err := replays.NewService(replays.ServiceConfig{Providers: []provider.Provider{provider.MustNew("GITHUB"), provider.MustNew("SLACK")},
		MaxRows: replayMaxRows}, replayStore, noopNotifier{})
	replayService = bulk
	Expect(err).NotTo(HaveOccurred())

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	reads, err := operatorapi.NewReadLimit(2)
	Expect(err).NotTo(HaveOccurred())
	Expect(console.Register(engine, console.Config{Management: svc, Dead: dead, Erasures: erasureSvc,
		Sessions: sessions, Members: members, Changes: feed, Syncs: syncs, Installs: installs, Replays: bulk,
		Deliveries: browser, Rejections: rejected, Reads: reads, AdminToken: adminToken, TraceURL: traceURL, Log: support.Logger{}})).To(Succeed())
	// The API's deliveries browser beside the console, sharing its limit of reads per account as
	// on a server.
	operatorapi.RegisterDeliveries(engine, svc, members, browser, reads, support.Logger{})
	server = httptest.NewServer(engine)
	DeferCleanup(server.Close)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

var _ ports.Notifier = noopNotifier{}

// fixture: workspace acme with an ADMIN ana, workspace other with an ADMIN olga, and a dead
// letter of acme.
type fixture struct {
	ana, olga management.CreatedAccount
	acme      ports.Workspace
	deadID    int64
}

var logins atomic.Int64

func newFixture(ctx context.Context) fixture {
	GinkgoHelper()
	var f fixture
	f.acme = support.NewWorkspace(ctx, svc, "acme")
	support.NewWorkspace(ctx, svc, "other")
	n := logins.Add(1)
	f.ana = support.NewAccount(ctx, svc, fmt.Sprintf("ana%d", n), false, "acme", "ADMIN")
	f.olga = support.NewAccount(ctx, svc, fmt.Sprintf("olga%d", n), false, "other", "ADMIN")
	f.deadID = deadLetter(ctx, f.acme.ID, "GITHUB", "issues", "PERMANENT:*json.SyntaxError")
	return f
}

var keys atomic.Int64

// deadLetter stores a DEAD row of workspace ws as the claimers leave one.
func deadLetter(ctx context.Context, ws int64, provider, eventType, errorClass string) int64 {
	GinkgoHelper()
	var id int64
	key := fmt.Sprintf("console-delivery-%d", keys.Add(1))
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, headers, state, attempt, due_at, received_at, ended_at, error_class)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, 'DEAD', 3, now(), now() - interval '1 minute', now(), $9)
		RETURNING id`,
		ws, provider, eventType, key, provider+":repository:42:"+key, "repository:42",
		`{"action":"opened","issue":{"number":7,"title":"Broken"}}`,
		map[string]string{"X-GitHub-Event": eventType, "Hephaestus-Source-Server-Url": "https://github.com"},
		errorClass).Scan(&id)).To(Succeed())
	return id
}

func rowState(ctx context.Context, id int64) string {
	GinkgoHelper()
	return support.Scalar[string](ctx, pool, `SELECT state FROM provider_event WHERE id = $1`, id)
}

// browserless is a cookie-keeping client that does not follow redirects, so specs see them.
type browserless struct {
	*http.Client
}

func newClient() browserless {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	DeferCleanup(c.CloseIdleConnections)
	return browserless{c}
}

type answer struct {
	Status   int
	Body     string
	Location string
	Header   http.Header
}

func (b browserless) get(path string) answer {
	GinkgoHelper()
	res, err := b.Get(server.URL + path)
	Expect(err).NotTo(HaveOccurred())
	return read(res)
}

func (b browserless) post(path string, form url.Values) answer {
	GinkgoHelper()
	res, err := b.PostForm(server.URL+path, form)
	Expect(err).NotTo(HaveOccurred())
	return read(res)
}

func read(res *http.Response) answer {
	GinkgoHelper()
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	Expect(err).NotTo(HaveOccurred())
	return answer{Status: res.StatusCode, Body: string(raw), Location: res.Header.Get("Location"), Header: res.Header}
}

// signIn signs in with token through the sign-in form (its CSRF token) and answers the
// sign-in's answer.
func (b browserless) signIn(token string) answer {
	GinkgoHelper()
	return b.post("/console/sign-in", url.Values{"token": {token}, "csrf": {b.csrf("/console/sign-in")}})
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the form token of the page at path.
func (b browserless) csrf(path string) string {
	GinkgoHelper()
	a := b.get(path)
	Expect(a.Status).To(Equal(http.StatusOK), a.Body)
	m := csrfField.FindStringSubmatch(a.Body)
	Expect(m).To(HaveLen(2), "no CSRF field on "+path)
	return m[1]
}

func sessionCookie(h http.Header) *http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == console.CookieName {
			return c
		}
	}
	return nil
}
