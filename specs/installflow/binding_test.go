package installflow_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Install flows prove control and are bound to the browser", func() {
	var ana, gina account

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		ana = createAccount("ana", "acme", "ADMIN")
		gina = createAccount("gina", "globex", "ADMIN")
	})

	exchanges := func() int {
		fakeGH.mu.Lock()
		defer fakeGH.mu.Unlock()
		return len(fakeGH.exchanges)
	}
	slackExchanges := func() int {
		fakeSl.mu.Lock()
		defer fakeSl.mu.Unlock()
		return len(fakeSl.exchanges)
	}

	Describe("starting a flow", func() {
		for _, flow := range []string{"github-app", "slack"} {
			It("sets a short-lived, signed, HttpOnly, SameSite=Lax cookie for the callbacks on the answer of "+flow, func() {
				r := br.start(a, flow, "acme", ana.Token)
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				cookies := (&http.Response{Header: r.Header}).Cookies()
				Expect(cookies).To(HaveLen(1))
				c := cookies[0]
				Expect(c.Name).To(Equal("hx_install_" + flow))
				Expect(c.HttpOnly).To(BeTrue())
				Expect(c.SameSite).To(Equal(http.SameSiteLaxMode))
				Expect(c.Path).To(Equal("/connect/"))
				Expect(c.MaxAge).To(BeNumerically(">", 0))
				Expect(c.MaxAge).To(BeNumerically("<=", 3600))
				Expect(c.Value).To(MatchRegexp(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$`))
				Expect(r.Raw).NotTo(ContainSubstring(c.Value), "the cookie is not in the link")
			})
		}
	})

	Describe("the GitHub App setup URL", func() {
		var state string
		BeforeEach(func() { state = installURL(a, "github-app", "acme", ana.Token).Query().Get("state") })

		It("asks for confirmation naming the workspace, and creates, uses and exchanges nothing before it", func(ctx SpecContext) {
			r := br.get(a, githubQuery("1001", "code-ana", state))
			expectPage(r, http.StatusOK, "Confirm the connection")
			Expect(r.Raw).To(ContainSubstring("Workspace: <strong>acme</strong> (acme)"))
			Expect(r.Header.Get("Content-Security-Policy")).To(ContainSubstring("form-action 'self'"))
			Expect(r.Header.Get("X-Frame-Options")).To(Equal("DENY"))
			action, form := confirmation(r)
			Expect(action).To(Equal("/connect/github/setup"))
			Expect(form.Get("csrf")).NotTo(BeEmpty())
			Expect(form.Get("state")).To(Equal(state))
			Expect(connections(ctx)).To(BeZero())
			Expect(exchanges()).To(BeZero())
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM install_state_use`)).To(BeZero(), "the state is not used yet")

			r = br.post(b, action, form)
			expectPage(r, http.StatusOK, "connection was created for the workspace below")
			Expect(r.Raw).To(ContainSubstring("Workspace: <strong>acme</strong> (acme)"))
			Expect(connections(ctx)).To(Equal(1))
			expectCleanLogs(state)
		})

		It("creates the App connection for an installation on the person's own user account", func(ctx SpecContext) {
			expectPage(githubSetup(a, "11", "code-ana", state), http.StatusOK, "connection was created")
			Expect(support.Column(ctx, pool, `SELECT c.source_key FROM connection c`)).To(Equal([]string{"11"}))
			fakeGH.mu.Lock()
			defer fakeGH.mu.Unlock()
			Expect(fakeGH.reads).To(Equal([]string{"GET /api/v3/user"}))
		})

		It("refuses an organization member who is not its admin, and a pending admin", func(ctx SpecContext) {
			expectPage(githubSetup(a, "13", "code-ana", state), http.StatusForbidden, "You do not administer the account")
			fakeGH.mu.Lock()
			Expect(fakeGH.reads).To(Equal([]string{"GET /api/v3/user/memberships/orgs/other-org"}))
			fakeGH.memberships["gho_user-token-of-ana"]["octo-org"] = [2]string{"admin", "pending"}
			fakeGH.mu.Unlock()
			expectPage(githubSetup(a, "1001", "code-ana", installURL(a, "github-app", "acme", ana.Token).Query().Get("state")),
				http.StatusForbidden, "You do not administer the account")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("not-account-admin"))
			expectCleanLogs(state)
		})

		It("refuses an organization the person is no member of (GitHub answers 404)", func(ctx SpecContext) {
			fakeGH.mu.Lock()
			delete(fakeGH.memberships["gho_user-token-of-ana"], "octo-org")
			fakeGH.mu.Unlock()
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusForbidden, "You do not administer the account")
			Expect(connections(ctx)).To(BeZero())
		})

		It("refuses an installation listed only through a collaborator grant on another user's account", func(ctx SpecContext) {
			expectPage(githubSetup(a, "12", "code-ana", state), http.StatusForbidden, "You do not administer the account")
			Expect(connections(ctx)).To(BeZero())
			fakeGH.mu.Lock()
			defer fakeGH.mu.Unlock()
			Expect(fakeGH.reads).To(Equal([]string{"GET /api/v3/user"}))
		})

		It("says to retry and creates nothing when GitHub cannot say whether the person administers the account", func(ctx SpecContext) {
			fakeGH.mu.Lock()
			delete(fakeGH.users, "gho_user-token-of-ana") // /user and the membership answer 401
			fakeGH.mu.Unlock()
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusBadGateway, "Please retry")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("account-admin-unavailable"))
		})

		It("says to retry, not \"not an administrator\", when GitHub rate-limits the membership read", func(ctx SpecContext) {
			fakeGH.mu.Lock()
			fakeGH.rateLimited = true
			fakeGH.mu.Unlock()
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusBadGateway, "Please retry")
			Expect(connections(ctx)).To(BeZero())
			Expect(logs.all()).NotTo(ContainSubstring("not-account-admin"))
		})

		It("creates nothing for an attacker's link opened in a victim's browser that has no cookie", func(ctx SpecContext) {
			attacker := newBrowser()
			evil := attacker.installURL(a, "github-app", "globex", gina.Token).Query().Get("state")
			victim := newBrowser()
			r := victim.callback(a, githubQuery("1001", "code-ana", evil))
			expectPage(r, http.StatusForbidden, "was not started in this browser")
			Expect(r.Raw).NotTo(ContainSubstring("<form"))
			Expect(connections(ctx)).To(BeZero())
			Expect(exchanges()).To(BeZero(), "the victim's code is never exchanged")
			Expect(logs.all()).To(ContainSubstring("browser-cookie-missing"))
		})

		It("creates nothing for an attacker's link opened in a victim's browser that holds its own flow's cookie", func(ctx SpecContext) {
			attacker := newBrowser()
			evil := attacker.installURL(a, "github-app", "globex", gina.Token).Query().Get("state")
			// br (ana's) started its own flow (state) in BeforeEach.
			expectPage(br.callback(a, githubQuery("1001", "code-ana", evil)), http.StatusForbidden, "was not started in this browser")
			// A Slack flow's cookie is another flow's too.
			victim := newBrowser()
			victim.installURL(a, "slack", "acme", ana.Token)
			expectPage(victim.callback(a, githubQuery("1001", "code-ana", evil)), http.StatusForbidden, "was not started in this browser")
			Expect(connections(ctx)).To(BeZero())
			Expect(exchanges()).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("browser-cookie-of-other-flow"))

			// The attacker's confirmation form, posted from the victim's browser, creates nothing either.
			_, form := confirmation(attacker.get(a, githubQuery("1001", "code-ana", evil)))
			expectPage(br.post(a, "/connect/github/setup", form), http.StatusForbidden, "was not started in this browser")
			Expect(connections(ctx)).To(BeZero())

			// And ana's own flow still completes in her browser.
			expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusOK, "connection was created")
			Expect(support.Column(ctx, pool, `SELECT w.slug FROM connection c JOIN workspace w ON w.id = c.workspace_id`)).To(Equal([]string{"acme"}))
		})

		It("creates nothing for a confirmation POST without its CSRF token, or with another flow's, and the state stays usable", func(ctx SpecContext) {
			_, form := confirmation(br.get(a, githubQuery("1001", "code-ana", state)))
			token := form.Get("csrf")
			form.Del("csrf")
			expectPage(br.post(a, "/connect/github/setup", form), http.StatusBadRequest, "invalid")
			form.Set("csrf", strings.Repeat("A", len(token)))
			expectPage(br.post(a, "/connect/github/setup", form), http.StatusBadRequest, "invalid")
			Expect(connections(ctx)).To(BeZero())
			Expect(exchanges()).To(BeZero())
			Expect(logs.all()).To(ContainSubstring("csrf-token-invalid"))

			form.Set("csrf", token)
			expectPage(br.post(a, "/connect/github/setup", form), http.StatusOK, "connection was created")
			Expect(connections(ctx)).To(Equal(1))
		})

		It("refuses a confirmation that is not a bounded form", func(ctx SpecContext) {
			_, form := confirmation(br.get(a, githubQuery("1001", "code-ana", state)))
			req, err := http.NewRequest(http.MethodPost, a.URL+"/connect/github/setup", strings.NewReader(form.Encode()))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/json")
			expectPage(br.send(req), http.StatusBadRequest, "invalid")
			form.Set("padding", strings.Repeat("x", 9000))
			expectPage(br.post(a, "/connect/github/setup", form), http.StatusBadRequest, "invalid")
			Expect(connections(ctx)).To(BeZero())
		})
	})

	Describe("the Slack callback", func() {
		It("creates nothing for an attacker's link opened in a victim's browser, and the legitimate flow names its workspace", func(ctx SpecContext) {
			attacker := newBrowser()
			evil := attacker.installURL(a, "slack", "globex", gina.Token).Query().Get("state")
			victim := newBrowser()
			expectPage(victim.callback(a, slackQuery("slack-code", evil)), http.StatusForbidden, "was not started in this browser")
			Expect(connections(ctx)).To(BeZero())
			Expect(slackExchanges()).To(BeZero(), "the victim team's code is never exchanged")

			state := installURL(a, "slack", "acme", ana.Token).Query().Get("state")
			r := br.get(a, slackQuery("slack-code", state))
			expectPage(r, http.StatusOK, "Confirm the connection")
			Expect(r.Raw).To(ContainSubstring("Workspace: <strong>acme</strong> (acme)"))
			Expect(slackExchanges()).To(BeZero())
			action, form := confirmation(r)
			form.Del("csrf")
			expectPage(br.post(a, action, form), http.StatusBadRequest, "invalid")
			Expect(connections(ctx)).To(BeZero())

			r = slackCallback(b, "slack-code", state)
			expectPage(r, http.StatusOK, "connection was created")
			Expect(r.Raw).To(ContainSubstring("Workspace: <strong>acme</strong> (acme)"))
			Expect(support.Column(ctx, pool, `SELECT w.slug || ' ' || c.kind FROM connection c JOIN workspace w ON w.id = c.workspace_id`)).
				To(Equal([]string{"acme SLACK"}))
			expectCleanLogs(state, evil)
		})
	})

	It("stores the App connection's source URL canonical", func(ctx SpecContext) {
		state := installURL(a, "github-app", "acme", ana.Token).Query().Get("state")
		expectPage(githubSetup(a, "1001", "code-ana", state), http.StatusOK, "connection was created")
		u, err := url.Parse(fakeGH.URL)
		Expect(err).NotTo(HaveOccurred())
		Expect(support.Scalar[string](ctx, pool, `SELECT source_server_url FROM connection`)).To(Equal(fmt.Sprintf("http://%s", strings.ToLower(u.Host))))
	})
})
