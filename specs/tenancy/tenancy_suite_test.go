package tenancy_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deadletterstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/application/accessrecheck"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestTenancy(t *testing.T) {
	support.RunSpecs(t, "Tenant isolation")
}

const (
	adminToken    = "spec-instance-admin-token-0123456789"
	githubSecret  = "github-app-webhook-secret"
	slackSecret   = "slack-signing-secret"
	repoOfA       = 500 // workspace A's private repository, covered by A's installation
	installationA = 1001
	teamA         = "T0A"
)

var (
	db            *pgtest.Database
	pool          *pgxpool.Pool
	box           *secrets.AESGCM
	fakeGitHub    *gitHubAPI
	fakeGitLab    *gitLabAPI
	checker       *githubapi.RepositoryAccess
	gitlabChecker *gitlabapi.ResourceAccess
	server        *httptest.Server
	client        *http.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	gin.SetMode(gin.TestMode)
	db = support.Database(ctx)
	pool = support.Pool(ctx, db, 8)
	admissionPool, err := admissionstore.OpenPool(ctx, db.URL)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(admissionPool.Close)
	box = support.SecretBox()

	fakeGitHub = newGitHubAPI()
	checker, err = githubapi.NewRepositoryAccess(githubapi.AccessConfig{BaseURL: fakeGitHub.server.URL,
		HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	Expect(err).NotTo(HaveOccurred())

	fakeGitLab = newGitLabAPI()
	gitlabChecker, err = gitlabapi.NewResourceAccess(fakeGitLab.server.URL+"/api/v4", &http.Client{Timeout: 2 * time.Second})
	Expect(err).NotTo(HaveOccurred())

	modules := []contract.ProviderModule{github.Module{}, gitlab.Module{}, slack.Module{}, outline.Module{}}
	directory, err := managementstore.NewSourceDirectory(pool, box, managementstore.Config{Kinds: support.Kinds(modules...)})
	Expect(err).NotTo(HaveOccurred())
	m := support.ManagementOf(pool, management.Config{AdminToken: adminToken, AccessCheckers: []contract.ResourceAccessChecker{checker, gitlabChecker}},
		box, modules...)
	svc, workspaces := m.Service, m.Workspaces

	store, err := admissionstore.New(admissionPool)
	Expect(err).NotTo(HaveOccurred())
	admit, err := admission.New(admission.Config{DefaultSourceServerURL: "https://github.com"}, store, directory, noNotifier{}, noMetrics{}, support.Logger{}, systemClock{})
	Expect(err).NotTo(HaveOccurred())
	ghHook, err := github.NewWebhook(github.Config{WebhookSecret: []byte(githubSecret)})
	Expect(err).NotTo(HaveOccurred())
	slHook, err := slack.NewWebhook(slack.Config{SigningSecret: []byte(slackSecret)})
	Expect(err).NotTo(HaveOccurred())

	reader, err := deadletterstore.New(pool)
	Expect(err).NotTo(HaveOccurred())
	browser, err := deliveries.New(reader, support.Providers())
	Expect(err).NotTo(HaveOccurred())

	engine := gin.New()
	managementapi.Register(engine, svc, support.Logger{})
	reads, err := operatorapi.NewReadLimit(2)
	Expect(err).NotTo(HaveOccurred())
	operatorapi.RegisterDeliveries(engine, svc, workspaces, browser, reads, support.Logger{})
	Expect(webhookapi.Register(engine, admit, webhookapi.Hooks{ghHook, slHook}, webhookapi.Config{})).To(Succeed())
	server, client = support.Serve(engine)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	fakeGitHub.reset()
	fakeGitLab.reset()
})

// gitLabAPI is GitLab's GET /projects/{id} and /groups/{id} on an httptest server: it records
// which PRIVATE-TOKEN read which path, answers 200 with the id for what a token may read, 404
// (as GitLab does for what a token cannot see) otherwise, 401 for an unknown token, and a
// forced status for a path.
type gitLabAPI struct {
	server   *httptest.Server
	mu       sync.Mutex
	readable map[string]map[string]bool // token -> "/projects/7"
	forced   map[string]int
	calls    []apiCall
}

func newGitLabAPI() *gitLabAPI {
	f := &gitLabAPI{}
	f.reset()
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	DeferCleanup(f.server.Close)
	return f
}

func (f *gitLabAPI) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readable, f.forced, f.calls = map[string]map[string]bool{}, map[string]int{}, nil
}

func (f *gitLabAPI) grant(token, path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readable[token] == nil {
		f.readable[token] = map[string]bool{}
	}
	f.readable[token][path] = true
}

func (f *gitLabAPI) force(path string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forced[path] = status
}

func (f *gitLabAPI) recorded() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

func (f *gitLabAPI) serve(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get("PRIVATE-TOKEN")
	path := strings.TrimPrefix(r.URL.Path, "/api/v4")
	f.mu.Lock()
	f.calls = append(f.calls, apiCall{Path: path, Token: token})
	known, can, forced := f.readable[token] != nil, f.readable[token][path], f.forced[path]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case forced != 0:
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(forced)
		_, _ = io.WriteString(w, `{"message":"try later"}`)
	case !known:
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"message":"401 Unauthorized"}`)
	case !can:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"404 Project Not Found"}`)
	default:
		_, id, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		_, _ = io.WriteString(w, `{"id":`+id+`,"name":"plans","path_with_namespace":"acme/plans"}`)
	}
}

// recheckServer is one server's access recheck, on a pool of its own (a "server").
func recheckServer(ctx context.Context, owner string) *accessrecheck.Recheck {
	GinkgoHelper()
	return recheckServerOf(ctx, owner, checker)
}

// recheckServerOf is recheckServer with the given checkers.
func recheckServerOf(ctx context.Context, owner string, checkers ...contract.ResourceAccessChecker) *accessrecheck.Recheck {
	GinkgoHelper()
	p := support.Pool(ctx, db, 2)
	connections, err := managementstore.NewConnections(p, managementstore.Config{Kinds: []connection.Kind{github.KindApp, github.KindPAT, gitlab.Kind}})
	Expect(err).NotTo(HaveOccurred())
	lease, err := inboxstore.New(p, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
	r, err := accessrecheck.New(accessrecheck.Config{Owner: owner, Interval: time.Hour}, connections, lease, box,
		checkers, support.Logger{}, systemClock{})
	Expect(err).NotTo(HaveOccurred())
	return r
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

type noNotifier struct{}

func (noNotifier) Notify() {}

type noMetrics struct{}

func (noMetrics) Received(string)         {}
func (noMetrics) Rejected(string, string) {}

// gitHubAPI is a fake GitHub REST API: GET /repositories/{id} answers as GitHub documents it,
// 200 with the repository when the bearer token may read it, 404 otherwise; a status set for
// a repository overrides that, and "hang" closes the connection without an answer.
type gitHubAPI struct {
	server *httptest.Server

	mu       sync.Mutex
	readable map[string]map[int64]bool // token -> repository ids it reads
	status   map[int64]int             // repository id -> forced status (0: none, -1: no answer)
	header   map[int64]http.Header     // repository id -> headers of the forced status
	otherID  map[int64]int64           // repository id -> id to answer instead (a wrong answer)
	calls    []apiCall
}

type apiCall struct {
	Path  string
	Token string
}

func newGitHubAPI() *gitHubAPI {
	f := &gitHubAPI{}
	f.reset()
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	DeferCleanup(f.server.Close)
	return f
}

func (f *gitHubAPI) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readable, f.status, f.header, f.otherID, f.calls = map[string]map[int64]bool{}, map[int64]int{},
		map[int64]http.Header{}, map[int64]int64{}, nil
}

func (f *gitHubAPI) grant(token string, repo int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readable[token] == nil {
		f.readable[token] = map[int64]bool{}
	}
	f.readable[token][repo] = true
}

func (f *gitHubAPI) revoke(token string, repo int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.readable[token], repo)
}

func (f *gitHubAPI) force(repo int64, status int, header http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[repo], f.header[repo] = status, header
}

func (f *gitHubAPI) answerFor(repo, other int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.otherID[repo] = other
}

func (f *gitHubAPI) recorded() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

func (f *gitHubAPI) serve(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	f.calls = append(f.calls, apiCall{Path: r.URL.Path, Token: token})
	raw, ok := strings.CutPrefix(r.URL.Path, "/repositories/")
	id, err := strconv.ParseInt(raw, 10, 64)
	status, header, other := f.status[id], f.header[id], f.otherID[id]
	can := f.readable[token][id]
	f.mu.Unlock()
	if r.Method != http.MethodGet || !ok || err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case status == -1:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	case status != 0:
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
		return
	case !can:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/repos/repos#get-a-repository"}`)
		return
	}
	if other != 0 {
		id = other
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "node_id": "R_kgDO", "name": "secret",
		"full_name": "acme/secret", "private": true, "owner": map[string]any{"login": "acme", "id": 1}})
}

// response is one answer of the server under test.
type response = support.Answer

// call sends body (nil: none; otherwise JSON) with token as bearer ("" for none).
func call(method, path, token string, body any) response {
	GinkgoHelper()
	return support.API{URL: server.URL, Client: client}.Call(method, path, token, body)
}

// do sends req to the server under test as it is.
func do(req *http.Request) response {
	GinkgoHelper()
	return support.API{Client: client}.Do(req)
}

// workspace creates a workspace with an ADMIN account and returns the workspace id and the
// ADMIN's token.
func workspace(slug string) (int64, string) {
	GinkgoHelper()
	r := call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": slug, "name": slug})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	ws := r.ID("id")
	return ws, member(slug, slug+"-admin", "ADMIN")
}

func member(slug, login, role string) string {
	GinkgoHelper()
	a := call(http.MethodPost, "/api/admin/accounts", adminToken, map[string]any{"login": login, "instanceAdmin": false})
	Expect(a.Status).To(Equal(http.StatusCreated), a.Raw)
	m := call(http.MethodPut, fmt.Sprintf("/api/workspaces/%s/members/%d", slug, a.ID("id")), adminToken, map[string]any{"role": role})
	Expect(m.Status).To(Equal(http.StatusOK), m.Raw)
	return a.JSON["token"].(string)
}

func createConnection(slug, token string, body map[string]any) response {
	GinkgoHelper()
	return call(http.MethodPost, "/api/workspaces/"+slug+"/connections", token, body)
}

func appConnection(slug string, installation int) int64 {
	GinkgoHelper()
	r := createConnection(slug, adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com",
		"config": map[string]any{"installationId": installation}})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	return r.ID("id")
}

func patConnection(slug, token, pat string) response {
	GinkgoHelper()
	body := map[string]any{"kind": "GITHUB_PAT", "sourceServerUrl": "https://github.com", "config": map[string]any{"login": "mallory"}}
	if pat != "" {
		body["secret"] = pat
	}
	return createConnection(slug, token, body)
}

func subscriptionsPath(slug string, id int64) string {
	return fmt.Sprintf("/api/workspaces/%s/connections/%d/subscriptions", slug, id)
}

func subscribe(slug, token string, id int64, resources ...map[string]any) response {
	GinkgoHelper()
	if resources == nil {
		resources = []map[string]any{}
	}
	return call(http.MethodPut, subscriptionsPath(slug, id), token, map[string]any{"resources": resources})
}

func repository(id int64) map[string]any {
	return map[string]any{"type": "repository", "id": strconv.FormatInt(id, 10), "name": "acme/secret"}
}

// deliverIssue posts a signed GitHub issues delivery of installation for repository.
func deliverIssue(installation, repo int64, deliveryKey string) response {
	GinkgoHelper()
	return deliverGitHub("issues", deliveryKey, map[string]any{
		"action":       "opened",
		"installation": map[string]any{"id": installation, "node_id": "MDIz"},
		"repository":   map[string]any{"id": repo, "name": "secret", "full_name": "acme/secret", "private": true},
		"issue":        map[string]any{"id": 77, "number": 1, "title": "private plans", "body": "do not leak"},
		"sender":       map[string]any{"id": 9, "login": "ana"},
	})
}

// deliverGitHub posts a signed GitHub delivery of event with payload.
func deliverGitHub(event, deliveryKey string, payload map[string]any) response {
	GinkgoHelper()
	body, err := json.Marshal(payload)
	Expect(err).NotTo(HaveOccurred())
	mac := hmac.New(sha256.New, []byte(githubSecret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, server.URL+"/webhooks/github", bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", deliveryKey)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return do(req)
}

// deliverSlack posts a signed Slack message event of team in channel.
func deliverSlack(team, channel, eventID string) response {
	GinkgoHelper()
	body, err := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": team, "api_app_id": "A1", "event_id": eventID, "event_time": 1700000000,
		"event": map[string]any{"type": "message", "channel": channel, "user": "U1", "text": "private", "ts": "1700000000.000100"},
	})
	Expect(err).NotTo(HaveOccurred())
	return deliverSlackBody(body)
}

// deliverSlackBody posts body to the Slack endpoint, signed with the app's signing secret.
func deliverSlackBody(body []byte) response {
	GinkgoHelper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(slackSecret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, server.URL+"/webhooks/slack", bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return do(req)
}

// storedFor counts the inbox rows of a workspace.
func storedFor(ctx context.Context, ws int64) int {
	GinkgoHelper()
	return support.Count(ctx, pool, `SELECT count(*) FROM provider_event WHERE workspace_id = $1`, ws)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func count(ctx context.Context, sql string, args ...any) int {
	GinkgoHelper()
	return support.Count(ctx, pool, sql, args...)
}

func connectionPath(slug string, id int64, rest string) string {
	return fmt.Sprintf("/api/workspaces/%s/connections/%d/%s", slug, id, rest)
}

func column(ctx context.Context, sql string, args ...any) []string {
	GinkgoHelper()
	return support.Column(ctx, pool, sql, args...)
}
