package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("The console's connection lifecycle buttons", func() {
	var (
		f    fixture
		conn int64
	)

	state := func(ctx context.Context) string {
		GinkgoHelper()
		return support.Scalar[string](ctx, pool, `SELECT state FROM connection WHERE id = $1`, conn)
	}

	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		// A connection as the management API stores one (the suite wires no provider module).
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://docs.example.com') RETURNING id`, f.acme.ID).Scan(&conn)).To(Succeed())
	})

	It("offers the transitions the state allows and applies one with the session's CSRF token", func(ctx SpecContext) {
		b := newClient()
		b.signIn(f.ana.Token)
		page := b.get("/console/workspaces/acme/connections")
		Expect(page.Status).To(Equal(http.StatusOK))
		suspend := fmt.Sprintf("/console/workspaces/acme/connections/%d/suspend", conn)
		Expect(page.Body).To(ContainSubstring(`action="` + suspend + `"`))
		Expect(page.Body).NotTo(ContainSubstring(fmt.Sprintf(`/connections/%d/activate"`, conn)), "an ACTIVE connection cannot be activated")

		a := b.post(suspend, url.Values{"csrf": {b.csrf("/console/workspaces/acme/connections")}})
		Expect(a.Status).To(Equal(http.StatusSeeOther), a.Body)
		Expect(state(ctx)).To(Equal("SUSPENDED"))
		after := b.get(a.Location)
		Expect(after.Body).To(ContainSubstring(fmt.Sprintf("Connection %d is SUSPENDED.", conn)))
		Expect(after.Body).To(ContainSubstring(fmt.Sprintf(`/connections/%d/activate"`, conn)))
	})

	It("refuses a transition without the CSRF token, and one by another workspace's ADMIN, and changes nothing", func(ctx SpecContext) {
		b := newClient()
		b.signIn(f.ana.Token)
		suspend := fmt.Sprintf("/console/workspaces/acme/connections/%d/suspend", conn)
		Expect(b.post(suspend, url.Values{}).Status).To(Equal(http.StatusForbidden))

		o := newClient()
		o.signIn(f.olga.Token)
		Expect(o.post(suspend, url.Values{"csrf": {o.csrf("/console/workspaces")}}).Status).To(Equal(http.StatusForbidden))
		// Olga's own workspace does not have the connection either.
		Expect(o.post(fmt.Sprintf("/console/workspaces/other/connections/%d/suspend", conn),
			url.Values{"csrf": {o.csrf("/console/workspaces")}}).Status).To(Equal(http.StatusNotFound))
		Expect(state(ctx)).To(Equal("ACTIVE"))
	})

	It("offers the workspace ADMIN no activate button for an UNINSTALLED GitHub App connection, and the instance administrator one", func(ctx SpecContext) {
		var app int64
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, 'GITHUB_APP', 'GITHUB', 'UNINSTALLED', 'https://github.com', '{"installationId":1001}', '1001') RETURNING id`,
			f.acme.ID).Scan(&app)).To(Succeed())
		activate := fmt.Sprintf("/console/workspaces/acme/connections/%d/activate", app)

		b := newClient()
		b.signIn(f.ana.Token)
		Expect(b.get("/console/workspaces/acme/connections").Body).NotTo(ContainSubstring(`action="` + activate + `"`))
		Expect(b.post(activate, url.Values{"csrf": {b.csrf("/console/workspaces/acme/connections")}}).Status).To(Equal(http.StatusForbidden))
		Expect(support.Scalar[string](ctx, pool, `SELECT state FROM connection WHERE id = $1`, app)).To(Equal("UNINSTALLED"))

		admin := newClient()
		admin.signIn(adminToken)
		Expect(admin.get("/console/workspaces/acme/connections").Body).To(ContainSubstring(`action="` + activate + `"`))
	})

	It("answers a transition the state machine forbids with 409 and changes nothing", func(ctx SpecContext) {
		b := newClient()
		b.signIn(f.ana.Token)
		activate := fmt.Sprintf("/console/workspaces/acme/connections/%d/activate", conn)
		Expect(b.post(activate, url.Values{"csrf": {b.csrf("/console/workspaces/acme/connections")}}).Status).To(Equal(http.StatusConflict))
		Expect(state(ctx)).To(Equal("ACTIVE"))
	})
})
