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

var _ = Describe("The console's sync progress and its Sync again button", func() {
	var (
		f      fixture
		conn   int64
		member string
		page   string
		start  string
	)

	// rawMessage is what a careless writer could leave in last_error; the console must never
	// show it.
	const rawMessage = `Get "https://docs.example.com/api": dial tcp 10.0.0.7:443: secret-host refused`

	job := func(ctx context.Context, resourceID, state string, items, pages int, lastError *string) {
		GinkgoHelper()
		_, err := pool.Exec(ctx, `
			INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id, state,
			                      items, pages, started_at, finished_at, last_error)
			VALUES ($1, $2, 'OUTLINE', 'BACKFILL', 'collection', $3, $4, $5, $6,
			        '2026-01-02T10:00:00Z', '2026-01-02T10:05:00Z', $7)`,
			f.acme.ID, conn, resourceID, state, items, pages, lastError)
		Expect(err).NotTo(HaveOccurred())
	}
	states := func(ctx context.Context) []string {
		GinkgoHelper()
		return support.Column(ctx, pool, `SELECT state || ':' || items || ':' || COALESCE(last_error, '-') FROM sync_job WHERE connection_id = $1 ORDER BY resource_id`, conn)
	}
	seeded := []string{"DONE:120:-", "FAILED:40:provider-unreadable", "FAILED:0:" + rawMessage}

	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		member = support.NewAccount(ctx, svc, fmt.Sprintf("mia%d", logins.Add(1)), false, "acme", "MEMBER").Token
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://docs.example.com') RETURNING id`, f.acme.ID).Scan(&conn)).To(Succeed())
		unreadable, raw := "provider-unreadable", rawMessage
		job(ctx, "c1", "DONE", 120, 2, nil)
		job(ctx, "c2", "FAILED", 40, 1, &unreadable)
		job(ctx, "c3", "FAILED", 0, 0, &raw)
		Expect(states(ctx)).To(Equal(seeded))
		page = fmt.Sprintf("/console/workspaces/acme/connections/%d/sync", conn)
		start = page
	})

	expectProgress := func(body string) {
		GinkgoHelper()
		Expect(body).To(ContainSubstring(`Sync: <strong class="sync-state">FAILED</strong>`), "the overall state")
		Expect(body).To(MatchRegexp(`<td><code>c1</code></td><td class="sync-state">DONE</td><td>120</td><td>2</td><td>2026-01-02 10:00:00Z</td><td>2026-01-02 10:05:00Z</td><td>—</td>`))
		Expect(body).To(MatchRegexp(`<td><code>c2</code></td><td class="sync-state">FAILED</td><td>40</td><td>1</td>.*<code class="error-class">provider-unreadable</code>`))
		Expect(body).To(MatchRegexp(`<td><code>c3</code></td><td class="sync-state">FAILED</td>.*<code class="error-class">unknown</code>`))
		Expect(body).NotTo(ContainSubstring("secret-host"), "a raw message is never shown")
		Expect(body).NotTo(ContainSubstring("dial tcp"))
	}

	It("shows the ADMIN, on the connections page and the sync page, each resource's state, items, pages, times and classified error, and the overall state", func() {
		b := newClient()
		b.signIn(f.ana.Token)
		list := b.get("/console/workspaces/acme/connections")
		Expect(list.Status).To(Equal(http.StatusOK))
		expectProgress(list.Body)
		Expect(list.Body).To(ContainSubstring(`action="` + start + `"`))
		Expect(list.Body).NotTo(ContainSubstring("placeholder"))

		one := b.get(page)
		Expect(one.Status).To(Equal(http.StatusOK), one.Body)
		expectProgress(one.Body)
		Expect(one.Body).To(ContainSubstring(`action="` + start + `"`))
		Expect(one.Body).To(ContainSubstring("Sync again"))
		Expect(one.Body).NotTo(ContainSubstring(`http-equiv="refresh"`), "nothing runs, so the page does not reload itself")
	})

	It("shows IDLE for a connection with no backfill", func(ctx SpecContext) {
		var idle int64
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://wiki.example.com') RETURNING id`, f.acme.ID).Scan(&idle)).To(Succeed())
		b := newClient()
		b.signIn(f.ana.Token)
		one := b.get(fmt.Sprintf("/console/workspaces/acme/connections/%d/sync", idle))
		Expect(one.Status).To(Equal(http.StatusOK), one.Body)
		Expect(one.Body).To(ContainSubstring(`Sync: <strong class="sync-state">IDLE</strong>`))
		Expect(one.Body).To(ContainSubstring("No backfill yet"))
		Expect(one.Body).NotTo(ContainSubstring("<code>c1</code>"), "another connection's jobs are not shown")
	})

	It("shows a MEMBER the progress without the Sync again button, and refuses the MEMBER's POST", func(ctx SpecContext) {
		m := newClient()
		m.signIn(member)
		one := m.get(page)
		Expect(one.Status).To(Equal(http.StatusOK), one.Body)
		expectProgress(one.Body)
		Expect(one.Body).NotTo(ContainSubstring(`action="` + start + `"`))
		Expect(one.Body).NotTo(ContainSubstring("Sync again"))
		// The connections list is an ADMIN page, as the API's connection list.
		Expect(m.get("/console/workspaces/acme/connections").Status).To(Equal(http.StatusForbidden))

		a := m.post(start, url.Values{"csrf": {m.csrf(page)}})
		Expect(a.Status).To(Equal(http.StatusForbidden), a.Body)
		Expect(states(ctx)).To(Equal(seeded))
	})

	It("restarts every backfill on the ADMIN's Sync again with the session's CSRF token, and refuses it without one", func(ctx SpecContext) {
		b := newClient()
		b.signIn(f.ana.Token)
		Expect(b.post(start, url.Values{}).Status).To(Equal(http.StatusForbidden))
		Expect(b.post(start, url.Values{"csrf": {"forged-token"}}).Status).To(Equal(http.StatusForbidden))
		Expect(states(ctx)).To(Equal(seeded))

		a := b.post(start, url.Values{"csrf": {b.csrf(page)}})
		Expect(a.Status).To(Equal(http.StatusSeeOther), a.Body)
		Expect(states(ctx)).To(Equal([]string{"QUEUED:0:-", "QUEUED:0:-", "QUEUED:0:-"}))
		after := b.get(a.Location)
		Expect(after.Status).To(Equal(http.StatusOK))
		Expect(after.Body).To(ContainSubstring(fmt.Sprintf("The sync of connection %d started again", conn)))
		Expect(after.Body).To(ContainSubstring(`Sync: <strong class="sync-state">RUNNING</strong>`))
		Expect(after.Body).To(ContainSubstring(`<meta http-equiv="refresh" content="5">`), "a running sync's page reloads itself")
	})

	It("lets the instance administrator restart too", func(ctx SpecContext) {
		b := newClient()
		b.signIn(adminToken)
		one := b.get(page)
		Expect(one.Body).To(ContainSubstring(`action="` + start + `"`))
		Expect(b.post(start, url.Values{"csrf": {b.csrf(page)}}).Status).To(Equal(http.StatusSeeOther))
		Expect(states(ctx)).To(Equal([]string{"QUEUED:0:-", "QUEUED:0:-", "QUEUED:0:-"}))
	})

	It("answers Sync again on a connection that is not ACTIVE with 409 and a message saying so, and changes nothing", func(ctx SpecContext) {
		_, err := pool.Exec(ctx, `UPDATE connection SET state = 'SUSPENDED' WHERE id = $1`, conn)
		Expect(err).NotTo(HaveOccurred())
		b := newClient()
		b.signIn(f.ana.Token)
		a := b.post(start, url.Values{"csrf": {b.csrf(page)}})
		Expect(a.Status).To(Equal(http.StatusConflict), a.Body)
		Expect(a.Body).To(ContainSubstring(fmt.Sprintf("Connection %d is not active (SUSPENDED), so it cannot sync.", conn)))
		Expect(states(ctx)).To(Equal(seeded))
	})

	It("does not show the page to a member of another workspace, nor the connection through that workspace, nor restart it", func(ctx SpecContext) {
		o := newClient()
		o.signIn(f.olga.Token)
		Expect(o.get(page).Status).To(Equal(http.StatusForbidden))
		other := o.get(fmt.Sprintf("/console/workspaces/other/connections/%d/sync", conn))
		Expect(other.Status).To(Equal(http.StatusNotFound))
		Expect(other.Body).NotTo(ContainSubstring("c1"))
		Expect(o.get(fmt.Sprintf("/console/workspaces/nowhere/connections/%d/sync", conn)).Status).To(Equal(http.StatusNotFound))
		csrf := o.csrf("/console/workspaces")
		Expect(o.post(start, url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusForbidden))
		Expect(o.post(fmt.Sprintf("/console/workspaces/other/connections/%d/sync", conn), url.Values{"csrf": {csrf}}).Status).To(Equal(http.StatusNotFound))
		Expect(states(ctx)).To(Equal(seeded))
	})

	It("lists, for a MEMBER who may not list the connections, each connection's sync state linked to its sync page, from the workspace card", func(ctx SpecContext) {
		var idle, otherConn int64
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://wiki.example.com') RETURNING id`, f.acme.ID).Scan(&idle)).To(Succeed())
		var otherWS int64
		Expect(pool.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'other'`).Scan(&otherWS)).To(Succeed())
		Expect(pool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://elsewhere.example.com') RETURNING id`, otherWS).Scan(&otherConn)).To(Succeed())
		_, err := pool.Exec(ctx, `
			INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id, state)
			VALUES ($1, $2, 'OUTLINE', 'BACKFILL', 'collection', 'o1', 'QUEUED')`, otherWS, otherConn)
		Expect(err).NotTo(HaveOccurred())

		m := newClient()
		m.signIn(member)
		home := m.get("/console/workspaces")
		Expect(home.Status).To(Equal(http.StatusOK))
		Expect(home.Body).To(ContainSubstring(`href="/console/workspaces/acme/sync"`))
		Expect(home.Body).NotTo(ContainSubstring(`href="/console/workspaces/acme/connections"`), "the connections list stays an ADMIN page")

		overview := m.get("/console/workspaces/acme/sync")
		Expect(overview.Status).To(Equal(http.StatusOK), overview.Body)
		Expect(overview.Body).To(MatchRegexp(fmt.Sprintf(`<a href="%s">Connection %d</a></td><td>OUTLINE</td><td class="sync-state">FAILED</td>`, page, conn)))
		Expect(overview.Body).NotTo(ContainSubstring(fmt.Sprintf("Connection %d<", idle)), "a connection without backfills is not listed")
		Expect(overview.Body).NotTo(ContainSubstring(fmt.Sprintf("Connection %d<", otherConn)), "another workspace's connection is never listed")
		Expect(overview.Body).NotTo(ContainSubstring("docs.example.com"), "the overview shows no connection detail but id, provider and state")
		Expect(m.get(page).Status).To(Equal(http.StatusOK), "the link leads to a page the MEMBER may read")
	})

	It("refuses the workspace sync page to a member of another workspace and answers 404 for an unknown one", func() {
		o := newClient()
		o.signIn(f.olga.Token)
		refused := o.get("/console/workspaces/acme/sync")
		Expect(refused.Status).To(Equal(http.StatusForbidden))
		Expect(refused.Body).NotTo(ContainSubstring(fmt.Sprintf("Connection %d", conn)))
		Expect(o.get("/console/workspaces/nowhere/sync").Status).To(Equal(http.StatusNotFound))
		Expect(newClient().get("/console/workspaces/acme/sync").Status).NotTo(Equal(http.StatusOK), "no session, no page")

		a := newClient()
		a.signIn(adminToken)
		Expect(a.get("/console/workspaces/acme/sync").Body).To(ContainSubstring(fmt.Sprintf("Connection %d</a>", conn)), "the instance administrator sees it")
	})
})
