package console_test

import (
	"fmt"
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Console sessions", func() {
	var f fixture
	BeforeEach(func(ctx SpecContext) { f = newFixture(ctx) })

	When("an account signs in with its token", func() {
		It("sets an HttpOnly, SameSite=Strict cookie scoped to /console whose value is a random id, not the token", func(ctx SpecContext) {
			a := newClient().signIn(f.ana.Token)
			Expect(a.Status).To(Equal(http.StatusSeeOther))
			Expect(a.Location).To(Equal("/console/workspaces"))
			c := sessionCookie(a.Header)
			Expect(c).NotTo(BeNil())
			Expect(c.HttpOnly).To(BeTrue())
			Expect(c.SameSite).To(Equal(http.SameSiteStrictMode))
			Expect(c.Path).To(Equal("/console"))
			Expect(c.Secure).To(BeFalse(), "plain HTTP: a Secure cookie would never come back")
			Expect(c.Value).NotTo(ContainSubstring(f.ana.Token))
			Expect(len(c.Value)).To(BeNumerically(">=", 43))
			// Only the id's hash is stored, and nothing of the token.
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM console_session`)).To(Equal(1))
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM console_session WHERE id_hash = convert_to($1, 'UTF8')`, c.Value)).To(Equal(0))
		})

		It("refuses a wrong token with 401 and starts no session", func(ctx SpecContext) {
			a := newClient().signIn("not-a-token")
			Expect(a.Status).To(Equal(http.StatusUnauthorized))
			Expect(sessionCookie(a.Header)).To(BeNil())
			Expect(support.Count(ctx, pool, `SELECT count(*) FROM console_session`)).To(Equal(0))
		})
	})

	It("refuses a sign-in post without the sign-in form's CSRF token, or with another form's, and starts no session", func(ctx SpecContext) {
		before := support.Count(ctx, pool, `SELECT count(*) FROM console_session`)
		// A page of another site posting its own token to the form has no sign-in cookie.
		forged := newClient().post("/console/sign-in", url.Values{"token": {f.ana.Token}})
		Expect(forged.Status).To(Equal(http.StatusForbidden))
		Expect(sessionCookie(forged.Header)).To(BeNil())
		// A form token that is not the cookie's.
		b := newClient()
		b.csrf("/console/sign-in")
		wrong := b.post("/console/sign-in", url.Values{"token": {f.ana.Token}, "csrf": {"not-the-form-token"}})
		Expect(wrong.Status).To(Equal(http.StatusForbidden))
		Expect(sessionCookie(wrong.Header)).To(BeNil())
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM console_session`)).To(Equal(before))
		// The form's own token signs in.
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
	})

	It("sends a page read without a session to the sign-in form, and refuses a POST with 403", func(ctx SpecContext) {
		b := newClient()
		a := b.get("/console/workspaces/acme/dead-letters")
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(a.Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces%2Facme%2Fdead-letters"))
		a = b.post(fmt.Sprintf("/console/workspaces/acme/dead-letters/%d/replay", f.deadID), url.Values{"csrf": {"x"}})
		Expect(a.Status).To(Equal(http.StatusForbidden))
		Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
	})

	It("ends the session on sign-out: the row is deleted and the cookie no longer opens a page", func(ctx SpecContext) {
		b := newClient()
		b.signIn(f.ana.Token)
		token := b.csrf("/console/workspaces")
		a := b.post("/console/sign-out", url.Values{"csrf": {token}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(support.Count(ctx, pool, `SELECT count(*) FROM console_session`)).To(Equal(0))
		Expect(b.get("/console/workspaces").Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces"))
	})

	It("ends the session at once when its token is revoked or its account disabled", func(ctx SpecContext) {
		b := newClient()
		b.signIn(f.ana.Token)
		Expect(b.get("/console/workspaces").Status).To(Equal(http.StatusOK))
		tokens, _, err := svc.ListTokens(ctx, support.InstanceAdmin, f.ana.ID, ports.PageRequest{Size: 10})
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.RevokeToken(ctx, support.InstanceAdmin, f.ana.ID, tokens[0].ID)).To(Succeed())
		Expect(b.get("/console/workspaces").Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces"))

		o := newClient()
		o.signIn(f.olga.Token)
		Expect(o.get("/console/workspaces").Status).To(Equal(http.StatusOK))
		Expect(svc.DisableAccount(ctx, support.InstanceAdmin, f.olga.ID)).To(Succeed())
		Expect(o.get("/console/workspaces").Location).To(Equal("/console/sign-in?next=%2Fconsole%2Fworkspaces"))
	})

	It("serves pages with a Content-Security-Policy that allows no script, and no script at all", func() {
		b := newClient()
		b.signIn(f.ana.Token)
		for _, path := range []string{"/console/sign-in", "/console/workspaces", "/console/workspaces/acme/dead-letters",
			fmt.Sprintf("/console/workspaces/acme/dead-letters/%d", f.deadID), "/console/workspaces/acme/connections", "/console/workspaces/acme/sync"} {
			a := b.get(path)
			Expect(a.Status).To(Equal(http.StatusOK), path)
			csp := a.Header.Get("Content-Security-Policy")
			Expect(csp).To(ContainSubstring("default-src 'none'"), path)
			Expect(csp).NotTo(ContainSubstring("script-src"), path)
			Expect(csp).NotTo(ContainSubstring("unsafe-inline"), path)
			Expect(a.Body).NotTo(ContainSubstring("<script"), path)
		}
	})
})

var _ = Describe("Console forms", func() {
	var (
		f fixture
		b browserless
	)
	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		b = newClient()
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
	})
	replayPath := func() string { return fmt.Sprintf("/console/workspaces/acme/dead-letters/%d/replay", f.deadID) }

	It("replays a dead letter after the confirmation step with the session's CSRF token", func(ctx SpecContext) {
		token := b.csrf(replayPath())
		a := b.post(replayPath(), url.Values{"csrf": {token}})
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(a.Location).To(Equal(fmt.Sprintf("/console/workspaces/acme/dead-letters?replayed=%d", f.deadID)))
		Expect(rowState(ctx, f.deadID)).To(Equal("QUEUED"))
		Expect(support.Scalar[int64](ctx, pool, `SELECT replayed_by FROM provider_event WHERE id = $1`, f.deadID)).To(Equal(f.ana.ID))
	})

	It("refuses a POST with a missing or wrong CSRF token with 403 and changes nothing", func(ctx SpecContext) {
		Expect(b.post(replayPath(), url.Values{}).Status).To(Equal(http.StatusForbidden))
		Expect(b.post(replayPath(), url.Values{"csrf": {"forged"}}).Status).To(Equal(http.StatusForbidden))
		// Another session's token is no token of this session.
		other := newClient()
		other.signIn(f.ana.Token)
		Expect(b.post(replayPath(), url.Values{"csrf": {other.csrf("/console/workspaces")}}).Status).To(Equal(http.StatusForbidden))
		Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
	})

	It("refuses a member of another workspace with 403: the dead letter, its replay and the workspace's pages", func(ctx SpecContext) {
		o := newClient()
		o.signIn(f.olga.Token)
		token := o.csrf("/console/workspaces")
		for _, path := range []string{"/console/workspaces/acme/dead-letters", fmt.Sprintf("/console/workspaces/acme/dead-letters/%d", f.deadID),
			replayPath(), "/console/workspaces/acme/connections"} {
			a := o.get(path)
			Expect(a.Status).To(Equal(http.StatusForbidden), path)
			Expect(a.Body).NotTo(ContainSubstring("Broken"), path)
		}
		Expect(o.post(replayPath(), url.Values{"csrf": {token}}).Status).To(Equal(http.StatusForbidden))
		Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
		// Its overview lists its own workspace only.
		overview := o.get("/console/workspaces").Body
		Expect(overview).To(ContainSubstring("other"))
		Expect(overview).NotTo(ContainSubstring(`id="ws-acme"`))
	})

	It("keeps the installation dead letters and erasures for the instance administrator", func() {
		Expect(b.get("/console/admin/dead-letters").Status).To(Equal(http.StatusForbidden))
		Expect(b.get("/console/admin/erasures").Status).To(Equal(http.StatusForbidden))
		admin := newClient()
		admin.signIn(adminToken)
		Expect(admin.get("/console/admin/dead-letters").Status).To(Equal(http.StatusOK))
		Expect(admin.get("/console/admin/erasures").Status).To(Equal(http.StatusOK))
		Expect(admin.get("/console/workspaces").Body).To(ContainSubstring(`id="ws-acme"`))
	})

	It("filters dead letters by provider, event type and error class", func(ctx SpecContext) {
		gitlab := deadLetter(ctx, f.acme.ID, "GITLAB", "merge_request", "TRANSIENT:*net.OpError")
		all := b.get("/console/workspaces/acme/dead-letters").Body
		Expect(all).To(ContainSubstring(fmt.Sprintf("Dead letter %d<", f.deadID)))
		Expect(all).To(ContainSubstring(fmt.Sprintf("Dead letter %d<", gitlab)))
		for _, q := range []string{"provider=GITLAB", "eventType=merge_request", "errorClass=TRANSIENT%3A%2Anet.OpError"} {
			page := b.get("/console/workspaces/acme/dead-letters?" + q).Body
			Expect(page).To(ContainSubstring(fmt.Sprintf("Dead letter %d<", gitlab)), q)
			Expect(page).NotTo(ContainSubstring(fmt.Sprintf("Dead letter %d<", f.deadID)), q)
		}
	})

	It("shows the payload pretty-printed and the stored headers", func() {
		page := b.get(fmt.Sprintf("/console/workspaces/acme/dead-letters/%d", f.deadID)).Body
		Expect(page).To(ContainSubstring("&#34;title&#34;: &#34;Broken&#34;"))
		Expect(page).To(ContainSubstring("X-GitHub-Event"))
	})
})
