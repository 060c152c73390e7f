package installflow_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githuboauth"
	"github.com/hephaestus-dev/hephaestus/adapters/http/installapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackoauth"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestInstallFlows(t *testing.T) {
	support.RunSpecs(t, "Install flows")
}

const (
	adminToken    = "spec-instance-admin-token-0123456789"
	appSlug       = "hephaestus-spec"
	githubClient  = "Iv1.spec-client"
	githubSecret  = "spec-github-client-secret"
	slackClientID = "111.222"
	slackSecret   = "spec-slack-client-secret"
	publicURL     = "https://hx.example"
)

// server is one "server" of the service: own pool, own services, own HTTP handler.
type server struct{ support.API }

var (
	pool     *pgxpool.Pool
	box      *secrets.AESGCM
	clock    = &fakeClock{}
	logs     = &recordingLogger{}
	fakeGH   *fakeGitHub
	fakeSl   *fakeSlack
	a, b     server
	stateKey = make([]byte, 32)
)

// suiteDB is the database every server of the suite shares.
var suiteDB *pgtest.Database

var _ = BeforeSuite(func(ctx SpecContext) {
	db := support.Database(ctx)
	suiteDB = db
	pool = support.Pool(ctx, db, 4)
	box = support.SecretBox()
	_, _ = rand.Read(stateKey)
	fakeGH, fakeSl = newFakeGitHub(), newFakeSlack()
	gin.SetMode(gin.TestMode)
	a, b = start(ctx, db), start(ctx, db)
})

func start(ctx context.Context, db *pgtest.Database) server {
	GinkgoHelper()
	return startWith(ctx, db, adminToken)
}

// startWith starts a server whose configured instance administrator token is admin.
func startWith(ctx context.Context, db *pgtest.Database, admin string) server {
	GinkgoHelper()
	p := support.Pool(ctx, db, 8)
	m := support.ManagementOf(p, management.Config{AdminToken: admin}, box, github.Module{}, slack.Module{})
	svc, connections := m.Service, m.Connections
	feed, err := changefeed.New(p, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(connections.PublishChanges(feed, managementapi.ConnectionView(svc))).To(Succeed())
	states, err := managementstore.NewInstallStates(p)
	Expect(err).NotTo(HaveOccurred())
	gh, err := githuboauth.New(githuboauth.Config{APIURL: fakeGH.URL + "/api/v3", OAuthURL: fakeGH.URL, ClientID: githubClient, ClientSecret: githubSecret})
	Expect(err).NotTo(HaveOccurred())
	sl, err := slackoauth.New(slackoauth.Config{APIURL: fakeSl.URL + "/api/", ClientID: slackClientID, ClientSecret: slackSecret})
	Expect(err).NotTo(HaveOccurred())
	flows, err := installflow.New(installflow.Config{StateKey: stateKey}, svc, states, []contract.InstallFlow{
		githuboauth.NewFlow(githuboauth.FlowConfig{WebURL: fakeGH.URL, AppSlug: appSlug}, gh),
		slackoauth.NewFlow(slackoauth.FlowConfig{ClientID: slackClientID, PublicURL: publicURL}, sl),
	}, clock, logs)
	Expect(err).NotTo(HaveOccurred())

	engine := gin.New()
	managementapi.Register(engine, svc, support.Logger{})
	installapi.Register(engine, flows, svc, installapi.Config{})
	s, c := support.Serve(engine)
	// The callbacks are browser redirects: the client must not follow anything.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return server{support.API{URL: s.URL, Client: c}}
}

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	clock.set(time.Now())
	logs.reset()
	fakeGH.reset()
	fakeSl.reset()
})

// fakeClock is the flows' clock, moved by specs.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recordingLogger keeps every line the flows log, rendered, to look for reasons and secrets.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLogger) record(level, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(level, " ", msg, " ", kv))
}
func (l *recordingLogger) Debugw(msg string, kv ...any) { l.record("DEBUG", msg, kv...) }
func (l *recordingLogger) Infow(msg string, kv ...any)  { l.record("INFO", msg, kv...) }
func (l *recordingLogger) Warnw(msg string, kv ...any)  { l.record("WARN", msg, kv...) }
func (l *recordingLogger) Errorw(msg string, kv ...any) { l.record("ERROR", msg, kv...) }
func (l *recordingLogger) reset()                       { l.mu.Lock(); defer l.mu.Unlock(); l.lines = nil }
func (l *recordingLogger) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// response is one answer of a server or of a fake provider.
type response = support.Answer

// do sends method path to s with token as the bearer ("" for none).
func (s server) do(method, path, token string) response {
	GinkgoHelper()
	return s.Call(method, path, token, nil)
}

// post sends the JSON body to s with token as the bearer ("" for none).
func (s server) post(path, token string, body string) response {
	GinkgoHelper()
	return s.Call(http.MethodPost, path, token, body)
}

// fakeGitHub answers as GitHub documents the OAuth code exchange and GET /user/installations
// (under /api/v3, as a GitHub Enterprise Server root would be).
type fakeGitHub struct {
	*httptest.Server
	mu            sync.Mutex
	codes         map[string]string  // code -> user token
	installations map[string][]int64 // user token -> installation ids (two per page)
	accounts      map[int64]ghAccount
	users         map[string]int64                // user token -> the person's user id
	memberships   map[string]map[string][2]string // user token -> org login -> role, state
	exchangeFails bool
	listFails     bool
	rateLimited   bool // the membership read answers GitHub's primary rate limit (403, remaining 0)
	exchanges     []*http.Request
	lists         []*http.Request
	reads         []string // "GET path" of /user and /user/memberships reads
}

// ghAccount is an installation's account as GitHub shows it.
type ghAccount struct {
	ID    int64
	Login string
	Type  string
}

func newFakeGitHub() *fakeGitHub {
	f := &fakeGitHub{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		_ = r.ParseForm()
		f.exchanges = append(f.exchanges, r)
		w.Header().Set("Content-Type", "application/json")
		if f.exchangeFails {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		token, ok := f.codes[r.PostForm.Get("code")]
		if r.Header.Get("Accept") != "application/json" || r.PostForm.Get("client_id") != githubClient ||
			r.PostForm.Get("client_secret") != githubSecret || !ok {
			// GitHub answers a bad code with 200 and an error member.
			_, _ = io.WriteString(w, `{"error":"bad_verification_code","error_description":"The code passed is incorrect or expired."}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","scope":""}`, token)
	})
	mux.HandleFunc("GET /api/v3/user/installations", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lists = append(f.lists, r)
		w.Header().Set("Content-Type", "application/json")
		if f.listFails {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		ids, ok := f.installations[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
			return
		}
		page := 1
		if r.URL.Query().Get("page") == "2" {
			page = 2
		}
		lo, hi := (page-1)*2, min(page*2, len(ids))
		if page == 2 {
			hi = len(ids) // the rest on the last page
		}
		if page == 1 && len(ids) > 2 {
			w.Header().Set("Link", fmt.Sprintf(`<%s/api/v3/user/installations?per_page=100&page=2>; rel="next"`, f.URL))
		}
		var items []string
		for _, id := range ids[lo:hi] {
			acc := f.accounts[id]
			items = append(items, fmt.Sprintf(`{"id":%d,"account":{"login":%q,"id":%d,"type":%q},"app_slug":%q,"target_type":%q}`,
				id, acc.Login, acc.ID, acc.Type, appSlug, acc.Type))
		}
		fmt.Fprintf(w, `{"total_count":%d,"installations":[%s]}`, len(ids), strings.Join(items, ","))
	})
	mux.HandleFunc("GET /api/v3/user", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reads = append(f.reads, "GET "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		id, ok := f.users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
			return
		}
		fmt.Fprintf(w, `{"login":"person-%d","id":%d,"type":"User"}`, id, id)
	})
	mux.HandleFunc("GET /api/v3/user/memberships/orgs/{org}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reads = append(f.reads, "GET "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, ok := f.users[token]; !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if f.rateLimited {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"message":"API rate limit exceeded"}`)
			return
		}
		m, ok := f.memberships[token][r.PathValue("org")]
		if !ok {
			// GitHub answers 404 for an organization the person is no member of.
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"Not Found"}`)
			return
		}
		var orgID int64
		for _, acc := range f.accounts {
			if acc.Login == r.PathValue("org") {
				orgID = acc.ID
			}
		}
		fmt.Fprintf(w, `{"url":"","state":%q,"role":%q,"organization":{"login":%q,"id":%d},"user":{"login":"ana","id":500}}`,
			m[1], m[0], r.PathValue("org"), orgID)
	})
	f.Server = httptest.NewServer(mux)
	DeferCleanup(f.Close)
	return f
}

func (f *fakeGitHub) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = map[string]string{"code-ana": "gho_user-token-of-ana"}
	// The installation the specs connect (1001, on octo-org, which ana administers) is on the
	// second page. 11 is on ana's own user account; 12 on bob's, whose repository ana
	// collaborates on; 13 on other-org, where ana is a plain member.
	f.installations = map[string][]int64{"gho_user-token-of-ana": {11, 12, 1001, 13}}
	f.accounts = map[int64]ghAccount{
		11:   {ID: 500, Login: "ana", Type: "User"},
		12:   {ID: 600, Login: "bob", Type: "User"},
		1001: {ID: 1, Login: "octo-org", Type: "Organization"},
		13:   {ID: 3, Login: "other-org", Type: "Organization"},
	}
	f.users = map[string]int64{"gho_user-token-of-ana": 500}
	f.memberships = map[string]map[string][2]string{"gho_user-token-of-ana": {
		"octo-org": {"admin", "active"}, "other-org": {"member", "active"},
	}}
	f.exchangeFails, f.listFails, f.rateLimited = false, false, false
	f.exchanges, f.lists, f.reads = nil, nil, nil
}

// fakeSlack answers oauth.v2.access as Slack documents it.
type fakeSlack struct {
	*httptest.Server
	mu        sync.Mutex
	fails     bool
	exchanges []url.Values
	// during, when set, runs while oauth.v2.access is being answered (what happens meanwhile
	// on the Hephaestus side).
	during func()
}

const botToken = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy"

func newFakeSlack() *fakeSlack {
	f := &fakeSlack{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/oauth.v2.access", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		_ = r.ParseForm()
		f.exchanges = append(f.exchanges, r.PostForm)
		if f.during != nil {
			f.during()
		}
		w.Header().Set("Content-Type", "application/json")
		id, secret, ok := r.BasicAuth()
		if f.fails || !ok || id != slackClientID || secret != slackSecret || r.PostForm.Get("code") != "slack-code" ||
			r.PostForm.Get("redirect_uri") != publicURL+"/connect/slack/callback" {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_code"}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"access_token":%q,"token_type":"bot","scope":"channels:history,chat:write",
			"bot_user_id":"U0KRQLJ9H","app_id":"A0KRD7HC3","team":{"name":"Slack Softball Team","id":"T9TK3CUKW"},
			"enterprise":null,"authed_user":{"id":"U1234","scope":"chat:write","access_token":"xoxp-1234","token_type":"user"}}`, botToken)
	})
	f.Server = httptest.NewServer(mux)
	DeferCleanup(f.Close)
	return f
}

func (f *fakeSlack) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails, f.exchanges, f.during = false, nil, nil
}
