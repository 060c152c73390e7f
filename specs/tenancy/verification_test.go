package tenancy_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// providerFakes is GitHub (App installation tokens, installations, repositories and
// organizations by id), Slack (conversations.info) and Outline (collections.info) on one
// httptest server. Each records which credential read which resource; each answers for a
// resource only to the credentials granted it, as the providers do (404, channel_not_found).
type providerFakes struct {
	server   *httptest.Server
	mu       sync.Mutex
	readable map[string]map[string]string // credential -> resource path -> name
	accounts map[int64]int64              // installation -> account id
	revoked  map[string]bool              // installation tokens answered 401
	mints    map[int64]int
	calls    []apiCall
}

func newProviderFakes() *providerFakes {
	f := &providerFakes{readable: map[string]map[string]string{}, accounts: map[int64]int64{}, revoked: map[string]bool{},
		mints: map[int64]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /github/app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		f.mints[id]++
		token := fmt.Sprintf("ghs_%d_%d", id, f.mints[id])
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":%q,"expires_at":%q}`, token, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("GET /github/app/installations/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		account := f.accounts[id]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%d,"account":{"id":%d,"login":"account-%d"},"suspended_at":null}`, id, account, account)
	})
	github := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			name, ok, revoked := f.read(token, "/"+kind+"/"+r.PathValue("id"))
			w.Header().Set("Content-Type", "application/json")
			switch {
			case revoked:
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
			case !ok:
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"message":"Not Found"}`)
			case kind == "repositories":
				fmt.Fprintf(w, `{"id":%s,"full_name":%q,"private":true}`, r.PathValue("id"), name)
			default:
				fmt.Fprintf(w, `{"id":%s,"login":%q}`, r.PathValue("id"), name)
			}
		}
	}
	mux.HandleFunc("GET /github/repositories/{id}", github("repositories"))
	mux.HandleFunc("GET /github/organizations/{id}", github("organizations"))
	mux.HandleFunc("POST /slack/conversations.info", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		channel := r.PostForm.Get("channel")
		name, ok, _ := f.read(token, "/channels/"+channel)
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			_, _ = io.WriteString(w, `{"ok":false,"error":"channel_not_found"}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"channel":{"id":%q,"name":%q,"is_private":true}}`, channel, name)
	})
	mux.HandleFunc("POST /outline/collections.info", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		name, ok, _ := f.read(token, "/collections/"+body.ID)
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"ok":false,"error":"not_found","status":404}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"data":{"id":%q,"name":%q}}`, body.ID, name)
	})
	f.server = httptest.NewServer(mux)
	DeferCleanup(f.server.Close)
	return f
}

// read records the call and says whether credential may read path, and the resource's name.
func (f *providerFakes) read(credential, path string) (name string, ok, revoked bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, apiCall{Path: path, Token: credential})
	if f.revoked[credential] {
		return "", false, true
	}
	name, ok = f.readable[credential][path]
	return name, ok, false
}

func (f *providerFakes) grant(credential, path, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readable[credential] == nil {
		f.readable[credential] = map[string]string{}
	}
	f.readable[credential][path] = name
}

func (f *providerFakes) recorded() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

// recordingLog keeps every line the verifying server logs, to prove refusals are logged with
// their reason and never with a credential.
type recordingLog struct {
	mu    sync.Mutex
	lines []string
}

var verificationLog *recordingLog

func (l *recordingLog) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(level, " ", msg, " ", kv))
}

func (l *recordingLog) Debugw(msg string, kv ...any) { l.add("DEBUG", msg, kv) }
func (l *recordingLog) Infow(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l *recordingLog) Warnw(msg string, kv ...any)  { l.add("WARN", msg, kv) }
func (l *recordingLog) Errorw(msg string, kv ...any) { l.add("ERROR", msg, kv) }

func (l *recordingLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// verifyingServer is the management API with every provider's real access checker against the
// fakes; withApp false is a server without an App private key.
func verifyingServer(f *providerFakes, withApp bool) func(method, path, token string, body any) response {
	GinkgoHelper()
	live, err := managementstore.NewLiveSecrets(pool, box)
	Expect(err).NotTo(HaveOccurred())
	var app *githubapi.App
	if withApp {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		app, err = githubapi.NewApp(githubapi.AppConfig{BaseURL: f.server.URL + "/github", AppID: "42", Key: key})
		Expect(err).NotTo(HaveOccurred())
	}
	appAccess, err := githubapi.NewAppResourceAccess(githubapi.AccessConfig{BaseURL: f.server.URL + "/github"}, app, live)
	Expect(err).NotTo(HaveOccurred())
	slackClient, err := webapi.New(webapi.Config{BaseURL: f.server.URL + "/slack/",
		Token: func(context.Context, int64, string) (string, error) { return "", webapi.ErrNoToken }})
	Expect(err).NotTo(HaveOccurred())
	slackAccess, err := webapi.NewChannelAccess(slackClient)
	Expect(err).NotTo(HaveOccurred())
	outlineClient, err := outlineapi.New(outlineapi.Config{BaseURL: f.server.URL + "/outline"})
	Expect(err).NotTo(HaveOccurred())

	m := support.ManagementOf(pool, management.Config{AdminToken: adminToken, AccessCheckers: []contract.ResourceAccessChecker{
		appAccess, slackAccess, outlineapi.NewCollectionAccess(outlineClient)}}, box, github.Module{}, gitlab.Module{}, slack.Module{}, outline.Module{})
	svc := m.Service
	engine := gin.New()
	verificationLog = &recordingLog{}
	managementapi.Register(engine, svc, verificationLog)
	srv, cl := support.Serve(engine)
	return support.API{URL: srv.URL, Client: cl}.Call
}

// Every subscription of every provider is verified with its connection's own
// credential. A ("acme") owns installation 1001 on organization 10 (acme-org) with private
// repository 500, Slack team T0A with private channel C0PRIVATE and Outline collection col-a;
// B ("globex") owns installation 2002 on organization 20 (globex-org), team T0B and its own
// Outline connection. B tries to subscribe to A's resources by id.
var _ = Describe("Every subscription is verified with its connection's own credential", func() {
	var (
		fakes              *providerFakes
		api                func(method, path, token string, body any) response
		wsA, wsB           int64
		adminB             string
		appA, appB         int64
		slackA, slackB     int64
		outlineA, outlineB int64
	)
	create := func(slug, token string, body map[string]any) int64 {
		GinkgoHelper()
		r := api(http.MethodPost, "/api/workspaces/"+slug+"/connections", token, body)
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		return r.ID("id")
	}
	sub := func(slug, token string, id int64, resources ...map[string]any) response {
		GinkgoHelper()
		return api(http.MethodPut, subscriptionsPath(slug, id), token, map[string]any{"resources": resources})
	}
	res := func(kind, id, name string) map[string]any {
		r := map[string]any{"type": kind, "id": id}
		if name != "" {
			r["name"] = name
		}
		return r
	}
	storedOf := func(ctx SpecContext, ws int64) []string {
		GinkgoHelper()
		return column(ctx, `SELECT resource_type || ':' || resource_id || ':' || name || ':' || access FROM connection_subscription WHERE workspace_id = $1 ORDER BY 1`, ws)
	}
	tokensOf := func(prefix string) []string {
		var out []string
		for _, c := range fakes.recorded() {
			if strings.HasPrefix(c.Path, prefix) {
				out = append(out, c.Token)
			}
		}
		return out
	}

	BeforeEach(func() {
		fakes = newProviderFakes()
		fakes.accounts[1001], fakes.accounts[2002] = 10, 20
		fakes.grant("ghs_1001_1", "/repositories/500", "acme/secret")
		fakes.grant("ghs_1001_1", "/organizations/10", "acme-org")
		fakes.grant("ghs_2002_1", "/organizations/10", "acme-org") // a public organization: any token reads it
		fakes.grant("ghs_2002_1", "/organizations/20", "globex-org")
		fakes.grant("ghs_2002_1", "/repositories/600", "globex/app")
		fakes.grant("xoxb-acme", "/channels/C0PRIVATE", "plans")
		fakes.grant("ol_acme", "/collections/col-a", "Engineering")
		api = verifyingServer(fakes, true)
		wsA, _ = workspace("acme")
		wsB, adminB = workspace("globex")
		appA = create("acme", adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com", "config": map[string]any{"installationId": 1001}})
		appB = create("globex", adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com", "config": map[string]any{"installationId": 2002}})
		slackA = create("acme", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com", "config": map[string]any{"teamId": "T0A", "appId": "A1"}, "secret": "xoxb-acme"})
		slackB = create("globex", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com", "config": map[string]any{"teamId": "T0B", "appId": "A1"}, "secret": "xoxb-globex"})
		outlineA = create("acme", adminToken, map[string]any{"kind": "OUTLINE", "sourceServerUrl": "https://docs.example.com", "config": map[string]any{}, "secret": "sig-a", "apiToken": "ol_acme"})
		outlineB = create("globex", adminB, map[string]any{"kind": "OUTLINE", "sourceServerUrl": "https://docs.example.com", "config": map[string]any{}, "secret": "sig-b", "apiToken": "ol_globex"})
	})

	Describe("GitHub App connections", func() {
		It("verify their own repositories and organization with their own installation token, and store GitHub's names", func(ctx SpecContext) {
			r := sub("acme", adminToken, appA, res("repository", "500", ""), res("organization", "10", "ACME-org"))
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(storedOf(ctx, wsA)).To(Equal([]string{"organization:10:acme-org:VERIFIED", "repository:500:acme/secret:VERIFIED"}))
			Expect(tokensOf("/repositories/")).To(Equal([]string{"ghs_1001_1"}))
			Expect(tokensOf("/organizations/")).To(Equal([]string{"ghs_1001_1"}))
		})

		It("refuse another tenant's organization by id, whatever name is given: 403 when the installation is not on it, 400 for a name that is not the id's", func(ctx SpecContext) {
			r := sub("globex", adminB, appB, res("organization", "10", "acme-org"))
			Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "resource-not-accessible"}))
			r = sub("globex", adminB, appB, res("organization", "20", "acme-org"))
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "name-mismatch"}))
			Expect(storedOf(ctx, wsB)).To(BeEmpty())
			Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE workspace_id = $1`, wsB)).To(BeZero(), "nothing to backfill")
			for _, c := range fakes.recorded() {
				Expect(c.Token).To(HavePrefix("ghs_2002_"), "only B's own installation token read for B: %+v", c)
			}

			By("each refusal is logged with its reason, never with a credential")
			logged := verificationLog.all()
			Expect(logged).To(ContainSubstring("organization-not-installed"))
			Expect(logged).To(ContainSubstring("name-mismatch"))
			Expect(logged).NotTo(ContainSubstring("ghs_"))

			By("its own organization, named by its id only, is verified and named by GitHub")
			Expect(sub("globex", adminB, appB, res("organization", "20", "")).Status).To(Equal(http.StatusOK))
			Expect(storedOf(ctx, wsB)).To(Equal([]string{"organization:20:globex-org:VERIFIED"}))
		})

		It("refuse another tenant's private repository the installation token cannot read", func(ctx SpecContext) {
			r := sub("globex", adminB, appB, res("repository", "600", ""), res("repository", "500", "globex/app"))
			Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
			Expect(storedOf(ctx, wsB)).To(BeEmpty(), "not even B's own repository of the same request")
			Expect(tokensOf("/repositories/")).To(ConsistOf("ghs_2002_1", "ghs_2002_1"))
		})

		It("mint the installation token again once when GitHub answers 401 to the cached one", func(ctx SpecContext) {
			Expect(sub("acme", adminToken, appA, res("repository", "500", "")).Status).To(Equal(http.StatusOK))
			fakes.mu.Lock()
			fakes.revoked["ghs_1001_1"] = true
			fakes.mu.Unlock()
			fakes.grant("ghs_1001_2", "/repositories/500", "acme/secret")
			Expect(sub("acme", adminToken, appA, res("repository", "500", "")).Status).To(Equal(http.StatusOK))
			Expect(tokensOf("/repositories/")).To(Equal([]string{"ghs_1001_1", "ghs_1001_1", "ghs_1001_2"}))
		})

		When("the server has no App private key", func() {
			BeforeEach(func() { api = verifyingServer(fakes, false) })

			It("refuses a workspace ADMIN's subscription (nothing can be verified, no instance-wide token reads it) and stores nothing", func(ctx SpecContext) {
				wsC, adminC := workspace("initech")
				appC := create("initech", adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com", "config": map[string]any{"installationId": 3003}})
				r := sub("initech", adminC, appC, res("organization", "10", "acme-org"))
				Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
				Expect(r.JSON).To(Equal(map[string]any{"error": "resource-not-accessible"}))
				Expect(storedOf(ctx, wsC)).To(BeEmpty())
				Expect(fakes.recorded()).To(BeEmpty(), "no provider read at all")
			})

			It("lets the instance administrator vouch for it, shown as such", func(ctx SpecContext) {
				r := sub("acme", adminToken, appA, res("repository", "500", "acme/secret"))
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				Expect(r.Raw).To(ContainSubstring(`"accessReason":"vouched-by-instance-admin"`))
				Expect(storedOf(ctx, wsA)).To(Equal([]string{"repository:500:acme/secret:VERIFIED"}))
			})
		})
	})

	It("verifies Slack channels with the team's own bot token and refuses another team's channel", func(ctx SpecContext) {
		r := sub("globex", adminB, slackB, res("channel", "C0PRIVATE", ""))
		Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
		Expect(storedOf(ctx, wsB)).To(BeEmpty())
		Expect(tokensOf("/channels/")).To(Equal([]string{"xoxb-globex"}))

		Expect(sub("acme", adminToken, slackA, res("channel", "C0PRIVATE", "")).Status).To(Equal(http.StatusOK))
		Expect(storedOf(ctx, wsA)).To(Equal([]string{"channel:C0PRIVATE:plans:VERIFIED"}))
		Expect(tokensOf("/channels/")).To(Equal([]string{"xoxb-globex", "xoxb-acme"}))
		Expect(verificationLog.all()).To(ContainSubstring("channel-not-found"))
		Expect(verificationLog.all()).NotTo(ContainSubstring("xoxb-"))
	})

	It("verifies Outline collections with the connection's own API key and refuses another tenant's collection", func(ctx SpecContext) {
		r := sub("globex", adminB, outlineB, res("collection", "col-a", ""))
		Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
		Expect(storedOf(ctx, wsB)).To(BeEmpty())
		Expect(sub("acme", adminToken, outlineA, res("collection", "col-a", "")).Status).To(Equal(http.StatusOK))
		Expect(storedOf(ctx, wsA)).To(Equal([]string{"collection:col-a:Engineering:VERIFIED"}))
		Expect(tokensOf("/collections/")).To(Equal([]string{"ol_globex", "ol_acme"}))
		Expect(verificationLog.all()).To(ContainSubstring("collection-not-found"))
		Expect(verificationLog.all()).NotTo(ContainSubstring("ol_"))
	})
})
