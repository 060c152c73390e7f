package installflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func createWorkspace(slug string) {
	GinkgoHelper()
	r := a.post("/api/admin/workspaces", adminToken, fmt.Sprintf(`{"slug":%q,"name":%q}`, slug, slug))
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
}

type account struct {
	ID    int64
	Token string
}

func createAccount(login, slug, role string) account {
	GinkgoHelper()
	r := a.post("/api/admin/accounts", adminToken, fmt.Sprintf(`{"login":%q}`, login))
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	var acc struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	Expect(json.Unmarshal([]byte(r.Raw), &acc)).To(Succeed())
	if role != "" {
		m := a.Call(http.MethodPut, fmt.Sprintf("/api/workspaces/%s/members/%d", slug, acc.ID), adminToken, fmt.Sprintf(`{"role":%q}`, role))
		Expect(m.Status).To(Equal(http.StatusOK), m.Raw)
	}
	return account{ID: acc.ID, Token: acc.Token}
}

// browser is one person's browser: a cookie jar of its own, no redirect followed (the specs
// follow the provider's redirects themselves).
type browser struct{ client *http.Client }

func newBrowser() *browser {
	GinkgoHelper()
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return &browser{client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// br is the browser of the person who starts the flows of a spec (a new one for every spec).
var br *browser

var _ = BeforeEach(func() { br = newBrowser() })

func (b *browser) send(req *http.Request) response {
	GinkgoHelper()
	return support.API{Client: b.client}.Do(req)
}

// start asks s for flow's install link of slug as token, from this browser (as the console's
// fetch would), and answers the whole response.
func (b *browser) start(s server, flow, slug, token string) response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/api/workspaces/"+slug+"/connections/"+flow+"/install", nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return b.send(req)
}

// installURL starts a flow ("github-app" or "slack") for slug as token in this browser and
// returns the link.
func (b *browser) installURL(s server, flow, slug, token string) *url.URL {
	GinkgoHelper()
	r := b.start(s, flow, slug, token)
	Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	Expect(r.Header.Get("Cache-Control")).To(Equal("no-store"))
	var body struct {
		InstallURL string `json:"installUrl"`
	}
	Expect(json.Unmarshal([]byte(r.Raw), &body)).To(Succeed())
	u, err := url.Parse(body.InstallURL)
	Expect(err).NotTo(HaveOccurred())
	return u
}

// installURL starts a flow in br.
func installURL(s server, flow, slug, token string) *url.URL {
	GinkgoHelper()
	return br.installURL(s, flow, slug, token)
}

// get is the provider's redirect to path arriving in this browser.
func (b *browser) get(s server, path string) response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	Expect(err).NotTo(HaveOccurred())
	return b.send(req)
}

// post submits form to path from this browser.
func (b *browser) post(s server, path string, form url.Values) response {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.send(req)
}

var (
	formPattern  = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	inputPattern = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// confirmation reads the confirmation page's form: its action and fields.
func confirmation(r response) (string, url.Values) {
	GinkgoHelper()
	m := formPattern.FindStringSubmatch(r.Raw)
	Expect(m).NotTo(BeNil(), r.Raw)
	form := url.Values{}
	for _, in := range inputPattern.FindAllStringSubmatch(r.Raw, -1) {
		form.Set(html.UnescapeString(in[1]), html.UnescapeString(in[2]))
	}
	return html.UnescapeString(m[1]), form
}

// callback follows the provider's redirect to path in this browser and, when the page asks
// for confirmation, confirms it; it answers the last page.
func (b *browser) callback(s server, path string) response {
	GinkgoHelper()
	r := b.get(s, path)
	if r.Status != http.StatusOK || !formPattern.MatchString(r.Raw) {
		return r
	}
	action, form := confirmation(r)
	return b.post(s, action, form)
}

func githubQuery(installationID, code, state string) string {
	return "/connect/github/setup?" + url.Values{"installation_id": {installationID}, "setup_action": {"install"}, "code": {code}, "state": {state}}.Encode()
}

func slackQuery(code, state string) string {
	return "/connect/slack/callback?" + url.Values{"code": {code}, "state": {state}}.Encode()
}

// githubSetup is GitHub's redirect to the setup URL in br, confirmed.
func githubSetup(s server, installationID, code, state string) response {
	GinkgoHelper()
	return br.callback(s, githubQuery(installationID, code, state))
}

// slackCallback is Slack's redirect to the callback in br, confirmed.
func slackCallback(s server, code, state string) response {
	GinkgoHelper()
	return br.callback(s, slackQuery(code, state))
}

// expectPage expects a plain HTML page with status saying text.
func expectPage(r response, status int, text string) {
	GinkgoHelper()
	Expect(r.Status).To(Equal(status), r.Raw)
	Expect(r.Header.Get("Content-Type")).To(Equal("text/html; charset=utf-8"))
	Expect(r.Header.Get("Cache-Control")).To(Equal("no-store"))
	Expect(r.Header.Get("Referrer-Policy")).To(Equal("no-referrer"))
	Expect(r.Raw).To(HavePrefix("<!doctype html>"))
	Expect(r.Raw).To(ContainSubstring(text))
}

func connections(ctx context.Context) int {
	GinkgoHelper()
	return support.Count(ctx, pool, `SELECT count(*) FROM connection`)
}

// expectCleanLogs expects no logged line to carry a code, token, client secret or state.
func expectCleanLogs(extra ...string) {
	GinkgoHelper()
	all := logs.all()
	for _, secret := range append([]string{"code-ana", "gho_user-token-of-ana", githubSecret, slackSecret, botToken, "slack-code", "xoxp-"}, extra...) {
		Expect(all).NotTo(ContainSubstring(secret))
	}
}

var _ = Describe("Install flows", func() {
	var ana, mia, gina account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", "acme", "ADMIN")
		mia = createAccount("mia", "acme", "MEMBER")
		gina = createAccount("gina", "globex", "ADMIN")
	})

	Describe("who may start one", func() {
		for _, flow := range []string{"github-app", "slack"} {
			It("lets the workspace's ADMIN and the instance administrator start "+flow+": 401 without a token, 403 for a MEMBER or another workspace's ADMIN, 404 for no such workspace", func() {
				path := "/api/workspaces/acme/connections/" + flow + "/install"
				Expect(a.post(path, "", "").Status).To(Equal(http.StatusUnauthorized))
				Expect(a.post(path, "hx_forged", "").Status).To(Equal(http.StatusUnauthorized))
				Expect(a.post(path, mia.Token, "").Status).To(Equal(http.StatusForbidden))
				Expect(a.post(path, gina.Token, "").Status).To(Equal(http.StatusForbidden))
				Expect(a.post("/api/workspaces/nowhere/connections/"+flow+"/install", ana.Token, "").Status).To(Equal(http.StatusNotFound))
				Expect(a.post(path, ana.Token, "").Status).To(Equal(http.StatusOK))
				Expect(a.post(path, adminToken, "").Status).To(Equal(http.StatusOK))
			})
		}

		It("answers the GitHub App's install page with a signed state", func() {
			u := installURL(a, "github-app", "acme", ana.Token)
			Expect(u.Scheme + "://" + u.Host).To(Equal(fakeGH.URL))
			Expect(u.Path).To(Equal("/apps/" + appSlug + "/installations/new"))
			Expect(u.Query().Get("state")).To(MatchRegexp(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$`))
		})

		It("answers Slack's OAuth v2 authorize page with client id, scopes, redirect and state", func() {
			u := installURL(a, "slack", "acme", ana.Token)
			Expect(u.Scheme + "://" + u.Host + u.Path).To(Equal("https://slack.com/oauth/v2/authorize"))
			Expect(u.Query().Get("client_id")).To(Equal(slackClientID))
			Expect(u.Query().Get("scope")).To(ContainSubstring("channels:history"))
			Expect(u.Query().Get("redirect_uri")).To(Equal(publicURL + "/connect/slack/callback"))
			Expect(u.Query().Get("state")).NotTo(BeEmpty())
		})
	})

	Describe("the GitHub App setup URL", func() {
		var state string
		BeforeEach(func() { state = installURL(a, "github-app", "acme", ana.Token).Query().Get("state") })

		It("creates the ACTIVE App connection when the installing person's user token lists the installation", func(ctx SpecContext) {
			r := githubSetup(b, "1001", "code-ana", state)
			expectPage(r, http.StatusOK, "connection was created")

			Expect(support.Column(ctx, pool, `SELECT w.slug || ' ' || c.kind || ' ' || c.state || ' ' || (c.config->>'installationId') || ' ' || c.source_key || ' ' || c.source_server_url
				FROM connection c JOIN workspace w ON w.id = c.workspace_id`)).
				To(Equal([]string{"acme GITHUB_APP ACTIVE 1001 1001 " + fakeGH.URL}))

			fakeGH.mu.Lock()
			defer fakeGH.mu.Unlock()
			Expect(fakeGH.exchanges).To(HaveLen(1))
			Expect(fakeGH.exchanges[0].Header.Get("Accept")).To(Equal("application/json"))
			Expect(fakeGH.lists).To(HaveLen(2), "the installation is on the second page")
			Expect(fakeGH.lists[0].Header.Get("Authorization")).To(Equal("Bearer gho_user-token-of-ana"))
			expectCleanLogs(state)
		})

		It("never trusts the installation id alone: one the user token does not list is refused, and the page says so", func(ctx SpecContext) {
			r := githubSetup(a, "4242", "code-ana", state)
			expectPage(r, http.StatusForbidden, "does not list this installation")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("installation-not-listed"))
			expectCleanLogs(state)
		})

		It("refuses a state that was already used, on any server", func(ctx SpecContext) {
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusOK, "connection was created")
			expectPage(githubSetup(b, "1001", "code-ana", state), http.StatusBadRequest, "expired, was already used, or is invalid")
			Expect(connections(ctx)).To(Equal(1))
			Expect(logs.all()).To(ContainSubstring("state-reused"))
		})

		It("refuses a forged state, a state signed with another key and a state of the Slack flow", func(ctx SpecContext) {
			payload, mac, _ := strings.Cut(state, ".")
			tampered := strings.Replace(payload, payload[len(payload)-4:], "AAAA", 1) + "." + mac
			for _, bad := range []string{"", "nonsense", tampered, payload + ".", state + "x",
				installURL(a, "slack", "acme", ana.Token).Query().Get("state")} {
				expectPage(githubSetup(a, "1001", "code-ana", bad), http.StatusBadRequest, "expired, was already used, or is invalid")
			}
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("state-signature-invalid"))
			Expect(logs.all()).To(ContainSubstring("state-of-other-flow"))
			fakeGH.mu.Lock()
			defer fakeGH.mu.Unlock()
			Expect(fakeGH.exchanges).To(BeEmpty(), "a refused state never reaches GitHub")
		})

		It("refuses a state older than an hour", func(ctx SpecContext) {
			clock.advance(61 * 60e9)
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusBadRequest, "expired")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("state-expired"))
		})

		It("refuses a state whose person no longer manages its workspace, or whose workspace was replaced", func(ctx SpecContext) {
			Expect(a.do(http.MethodDelete, fmt.Sprintf("/api/workspaces/acme/members/%d", ana.ID), adminToken).Status).
				To(Equal(http.StatusConflict), "ana is the last ADMIN")
			createAccount("bob", "acme", "ADMIN")
			Expect(a.do(http.MethodDelete, fmt.Sprintf("/api/workspaces/acme/members/%d", ana.ID), adminToken).Status).To(Equal(http.StatusNoContent))
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusBadRequest, "invalid")

			adminState := installURL(a, "github-app", "globex", adminToken).Query().Get("state")
			Expect(a.do(http.MethodDelete, "/api/admin/workspaces/globex", adminToken).Status).To(Equal(http.StatusNoContent))
			createWorkspace("globex")
			expectPage(githubSetup(a, "1001", "code-ana", adminState), http.StatusBadRequest, "invalid")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("workspace-not-managed"))
			Expect(logs.all()).To(ContainSubstring("workspace-replaced"))
		})

		It("answers 400 for an installation id that is not a number or a missing code", func(ctx SpecContext) {
			expectPage(githubSetup(a, "10x1", "code-ana", state), http.StatusBadRequest, "invalid")
			expectPage(githubSetup(a, "1001", "", state), http.StatusBadRequest, "invalid")
			Expect(connections(ctx)).To(BeZero())
		})

		It("says to retry and creates nothing when GitHub refuses the code or fails", func(ctx SpecContext) {
			expectPage(githubSetup(a, "1001", "code-wrong", state), http.StatusBadGateway, "Please retry")
			fakeGH.mu.Lock()
			fakeGH.exchangeFails = true
			fakeGH.mu.Unlock()
			expectPage(githubSetup(a, "1001", "code-ana", installURL(a, "github-app", "acme", ana.Token).Query().Get("state")), http.StatusBadGateway, "Please retry")
			fakeGH.mu.Lock()
			fakeGH.exchangeFails, fakeGH.listFails = false, true
			fakeGH.mu.Unlock()
			expectPage(githubSetup(a, "1001", "code-ana", installURL(a, "github-app", "acme", ana.Token).Query().Get("state")), http.StatusBadGateway, "Please retry")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("code-exchange-failed"))
			Expect(logs.all()).To(ContainSubstring("installations-unavailable"))
			expectCleanLogs(state, "code-wrong")
		})

		It("says the installation is already connected when a live connection has it", func(ctx SpecContext) {
			r := a.post("/api/workspaces/globex/connections", adminToken, `{"kind":"GITHUB_APP","sourceServerUrl":"https://github.com","config":{"installationId":1001}}`)
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusConflict, "already connected")
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM connection c JOIN workspace w ON w.id = c.workspace_id WHERE w.slug = 'acme'`)).To(BeZero())
		})
	})

	Describe("the Slack callback", func() {
		var state string
		BeforeEach(func() { state = installURL(a, "slack", "acme", ana.Token).Query().Get("state") })

		It("creates the SLACK connection from the team and app oauth.v2.access answered, with the bot token sealed", func(ctx SpecContext) {
			expectPage(slackCallback(b, "slack-code", state), http.StatusOK, "connection was created")
			Expect(support.Column(ctx, pool, `SELECT w.slug || ' ' || c.kind || ' ' || c.state || ' ' || (c.config->>'teamId') || ' ' || (c.config->>'appId') || ' ' || c.source_key
				FROM connection c JOIN workspace w ON w.id = c.workspace_id`)).
				To(Equal([]string{"acme SLACK ACTIVE T9TK3CUKW A0KRD7HC3 T9TK3CUKW"}))
			sealed := support.Scalar[[]byte](ctx, pool, `SELECT secret_ciphertext FROM connection`)
			Expect(string(sealed)).NotTo(ContainSubstring(botToken))
			id := support.Scalar[int64](ctx, pool, `SELECT id FROM connection`)
			opened, err := box.Open(id, sealed)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(opened)).To(Equal(botToken))
			expectCleanLogs(state)

			expectPage(slackCallback(a, "slack-code", state), http.StatusBadRequest, "already used")
		})

		It("says to retry and creates nothing when Slack refuses the code", func(ctx SpecContext) {
			expectPage(slackCallback(a, "bad-code", state), http.StatusBadGateway, "Please retry")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("code-exchange-failed"))
			expectCleanLogs(state, "bad-code")
		})

		It("refuses a forged, expired or GitHub state without asking Slack", func(ctx SpecContext) {
			expectPage(slackCallback(a, "slack-code", state[:len(state)-2]+"xx"), http.StatusBadRequest, "invalid")
			expectPage(slackCallback(a, "slack-code", installURL(a, "github-app", "acme", ana.Token).Query().Get("state")), http.StatusBadRequest, "invalid")
			clock.advance(61 * 60e9)
			expectPage(slackCallback(a, "slack-code", state), http.StatusBadRequest, "expired")
			Expect(connections(ctx)).To(BeZero())
			fakeSl.mu.Lock()
			defer fakeSl.mu.Unlock()
			Expect(fakeSl.exchanges).To(BeEmpty())
		})

		It("says the team is already connected when a live connection has it, and creates no second connection", func(ctx SpecContext) {
			r := a.post("/api/workspaces/globex/connections", adminToken, `{"kind":"SLACK","sourceServerUrl":"https://slack.com","config":{"teamId":"T9TK3CUKW"}}`)
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			expectPage(slackCallback(b, "slack-code", state), http.StatusConflict, "already connected")
			Expect(support.Column(ctx, pool, `SELECT w.slug || ' ' || c.kind || ' ' || c.source_key FROM connection c JOIN workspace w ON w.id = c.workspace_id`)).
				To(Equal([]string{"globex SLACK T9TK3CUKW"}), "only the earlier connection")
			Expect(support.Scalar[bool](ctx, pool, `SELECT secret_ciphertext IS NULL FROM connection`)).To(BeTrue(), "the refused flow's bot token is stored nowhere")
			Expect(logs.all()).To(ContainSubstring("already-connected"))
			expectCleanLogs(state)

			Expect(a.do(http.MethodPost, "/api/workspaces/globex/connections/"+fmt.Sprint(support.Scalar[int64](ctx, pool, `SELECT id FROM connection`))+"/uninstall", adminToken).Status).To(Equal(http.StatusOK))
			expectPage(slackCallback(a, "slack-code", installURL(a, "slack", "acme", ana.Token).Query().Get("state")), http.StatusOK, "connection was created")
			Expect(support.Column(ctx, pool, `SELECT w.slug || ' ' || c.state FROM connection c JOIN workspace w ON w.id = c.workspace_id ORDER BY c.id`)).
				To(Equal([]string{"globex UNINSTALLED", "acme ACTIVE"}), "an UNINSTALLED connection no longer holds the team")
		})

		It("creates nothing when the person declined on Slack's page", func(ctx SpecContext) {
			r := br.get(a, "/connect/slack/callback?error=access_denied&state="+url.QueryEscape(state))
			expectPage(r, http.StatusOK, "cancelled")
			Expect(connections(ctx)).To(BeZero())
		})
	})
})
