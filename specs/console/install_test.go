package console_test

import (
	"net/http"
	"net/url"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Starting an install flow from the console", func() {
	var f fixture
	BeforeEach(func(ctx SpecContext) { f = newFixture(ctx) })

	continueLink := regexp.MustCompile(`id="continue-install" href="([^"]+)"`)

	It("binds the install link to the browser that started it: the answer sets the flow's cookie and links to the provider", func() {
		b := newClient()
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
		page := b.get("/console/workspaces/acme/connections")
		Expect(page.Body).To(ContainSubstring(`href="/console/workspaces/acme/install"`))
		csrf := b.csrf("/console/workspaces/acme/install")
		Expect(b.get("/console/workspaces/acme/install").Body).To(ContainSubstring("start-install-slack"))

		a := b.post("/console/workspaces/acme/install/slack", url.Values{"csrf": {csrf}})
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: a.Header}).Cookies() {
			if c.Name == "hx_install_slack" {
				cookie = c
			}
		}
		Expect(cookie).NotTo(BeNil())
		Expect(cookie.HttpOnly).To(BeTrue())
		Expect(cookie.SameSite).To(Equal(http.SameSiteLaxMode))
		Expect(cookie.Path).To(Equal("/connect/"))
		m := continueLink.FindStringSubmatch(a.Body)
		Expect(m).To(HaveLen(2), a.Body)
		link, err := url.Parse(regexp.MustCompile(`&amp;`).ReplaceAllString(m[1], "&"))
		Expect(err).NotTo(HaveOccurred())
		Expect(link.Host).To(Equal("slack.com"))
		Expect(link.Query().Get("state")).NotTo(BeEmpty())
		Expect(a.Body).To(ContainSubstring("bound to this browser"))
	})

	It("refuses the start without the session's CSRF token, and to who may not manage the workspace", func() {
		b := newClient()
		Expect(b.signIn(f.ana.Token).Status).To(Equal(http.StatusSeeOther))
		a := b.post("/console/workspaces/acme/install/slack", url.Values{})
		Expect(a.Status).To(Equal(http.StatusForbidden))
		Expect(a.Header.Values("Set-Cookie")).NotTo(ContainElement(ContainSubstring("hx_install_slack")))

		o := newClient()
		Expect(o.signIn(f.olga.Token).Status).To(Equal(http.StatusSeeOther))
		csrf := o.csrf("/console/workspaces")
		a = o.post("/console/workspaces/acme/install/slack", url.Values{"csrf": {csrf}})
		Expect(a.Status).To(Equal(http.StatusForbidden))
		Expect(a.Header.Values("Set-Cookie")).NotTo(ContainElement(ContainSubstring("hx_install_slack")))
		Expect(o.get("/console/workspaces/acme/install").Status).To(Equal(http.StatusForbidden))

		Expect(b.post("/console/workspaces/acme/install/github-app", url.Values{"csrf": {b.csrf("/console/workspaces")}}).Status).
			To(Equal(http.StatusNotFound), "a flow this server has not configured")
	})
})
