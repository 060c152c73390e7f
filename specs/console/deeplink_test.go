package console_test

import (
	"net/http"
	"net/url"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var nextField = regexp.MustCompile(`name="next" value="([^"]*)"`)

var _ = Describe("A deep link through sign-in", func() {
	var f fixture
	BeforeEach(func(ctx SpecContext) { f = newFixture(ctx) })

	const deep = "/console/workspaces/acme/deliveries?state=DEAD&deliveryKey=gh-1"

	It("sends a page read without a session to sign-in carrying the page, and opens that page after sign-in", func() {
		b := newClient()
		a := b.get(deep)
		Expect(a.Status).To(Equal(http.StatusSeeOther))
		Expect(a.Location).To(Equal("/console/sign-in?" + url.Values{"next": {deep}}.Encode()))

		form := b.get(a.Location)
		Expect(form.Status).To(Equal(http.StatusOK))
		m := nextField.FindStringSubmatch(form.Body)
		Expect(m).To(HaveLen(2), "the form carries the page")
		Expect(html(m[1])).To(Equal(deep))
		csrf := csrfField.FindStringSubmatch(form.Body)[1]

		in := b.post("/console/sign-in", url.Values{"token": {f.ana.Token}, "csrf": {csrf}, "next": {html(m[1])}})
		Expect(in.Status).To(Equal(http.StatusSeeOther))
		Expect(in.Location).To(Equal(deep))
		Expect(b.get(in.Location).Status).To(Equal(http.StatusOK))
	})

	It("keeps the page through a refused token", func() {
		b := newClient()
		csrf := b.csrf("/console/sign-in?" + url.Values{"next": {deep}}.Encode())
		refused := b.post("/console/sign-in", url.Values{"token": {"not-a-token"}, "csrf": {csrf}, "next": {deep}})
		Expect(refused.Status).To(Equal(http.StatusUnauthorized))
		m := nextField.FindStringSubmatch(refused.Body)
		Expect(m).To(HaveLen(2))
		Expect(html(m[1])).To(Equal(deep))
	})

	It("accepts only a relative path of this console: anything else opens the workspaces, and the form does not carry it", func() {
		for _, next := range []string{
			"//evil.example",
			"https://evil.example/console/workspaces",
			"/\\evil.example",
			`/console\..\..\evil.example`,
			"/%5Cevil.example",
			"/%2F%2Fevil.example",
			"%2F%2Fevil.example",
			"/console/%2e%2e/%2e%2e/evil",
			"/console/..%2f..%2fevil",
			"/console/../evil",
			"/console//evil.example",
			"/console/\t/evil.example",
			"/console/workspaces\n/x",
			`/console/\evil.example`,
			"/console/workspaces /x",
			"/consoleevil",
			"/evil",
			"javascript:alert(1)",
			"/console/sign-in",
			"/console/workspaces#x",
			"http:/console/workspaces",
		} {
			b := newClient()
			form := b.get("/console/sign-in?" + url.Values{"next": {next}}.Encode())
			Expect(form.Status).To(Equal(http.StatusOK), next)
			Expect(nextField.FindStringSubmatch(form.Body)).To(BeNil(), next)
			csrf := csrfField.FindStringSubmatch(form.Body)[1]
			// A posted field is the client's to change: it is checked again.
			in := b.post("/console/sign-in", url.Values{"token": {f.ana.Token}, "csrf": {csrf}, "next": {next}})
			Expect(in.Status).To(Equal(http.StatusSeeOther), next)
			Expect(in.Location).To(Equal("/console/workspaces"), next)
		}
	})
})

var _ = Describe("The console's favicon", func() {
	It("is served from the binary at /favicon.ico, linked by every page, and the CSP stays as it was", func() {
		a := newClient().get("/favicon.ico")
		Expect(a.Status).To(Equal(http.StatusOK))
		Expect(a.Header.Get("Content-Type")).To(Equal("image/x-icon"))
		Expect(a.Body[:4]).To(Equal("\x00\x00\x01\x00"), "an ICO file")
		Expect(a.Body).To(ContainSubstring("\x89PNG"))

		page := newClient().get("/console/sign-in")
		Expect(page.Body).To(ContainSubstring(`<link rel="icon" href="/favicon.ico" type="image/x-icon">`))
		Expect(page.Header.Get("Content-Security-Policy")).To(Equal(
			"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"))
	})
})
