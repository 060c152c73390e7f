package console_test

import (
	"context"
	"fmt"
	stdhtml "html"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/rejectionstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// delivery is a row of the deliveries browser specs.
type delivery struct {
	ws          int64 // 0: an installation row
	state       string
	provider    string
	eventType   string
	subject     string
	key         string
	receivedAgo time.Duration
	errorClass  string
}

// insertDelivery stores a row of d as admission and the claimers leave one, and answers its id.
func insertDelivery(ctx context.Context, d delivery) int64 {
	GinkgoHelper()
	if d.provider == "" {
		d.provider = "GITHUB"
	}
	if d.eventType == "" {
		d.eventType = "issues"
	}
	if d.subject == "" {
		d.subject = "repository:42"
	}
	if d.key == "" {
		d.key = fmt.Sprintf("console-browser-%d", keys.Add(1))
	}
	var ws *int64
	if d.ws != 0 {
		ws = &d.ws
	}
	// Admission's scope of a workspace row (the subject filter uses it).
	scope := fmt.Sprintf("ws:%d:%s", d.ws, d.subject)
	if d.ws == 0 {
		scope = d.provider + ":" + d.subject
	}
	var ended, class, leasedUntil any
	attempt, epoch := 0, 0
	switch d.state {
	case "DONE", "DEAD":
		ended = time.Now().Add(-d.receivedAgo / 2)
	case "LEASED":
		attempt, epoch, leasedUntil = 1, 1, time.Now().Add(2*time.Minute)
	}
	if d.state == "DEAD" {
		class = d.errorClass
	}
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject,
		                            payload, headers, state, attempt, lease_epoch, leased_until, due_at, received_at,
		                            ended_at, error_class)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $13, $14, $15, now(), $10, $11, $12)
		RETURNING id`,
		ws, d.provider, d.eventType, d.key, scope, d.subject,
		`{"action":"opened","issue":{"number":9,"title":"Browsed"}}`,
		map[string]string{"X-GitHub-Event": d.eventType, "Hephaestus-Source-Server-Url": "https://github.com"},
		d.state, time.Now().Add(-d.receivedAgo), ended, class, attempt, epoch, leasedUntil).Scan(&id)).To(Succeed())
	return id
}

var deliveryRow = regexp.MustCompile(`<tr id="delivery-(\d+)">`)

// listed is the ids of the browser page's rows, in page order.
func listed(body string) []int64 {
	GinkgoHelper()
	var out []int64
	for _, m := range deliveryRow.FindAllStringSubmatch(body, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		Expect(err).NotTo(HaveOccurred())
		out = append(out, id)
	}
	return out
}

var _ = Describe("The console's deliveries browser", func() {
	var (
		f      fixture
		member string // a MEMBER of acme
	)
	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		member = newAccount(ctx, "acme", "MEMBER")
	})

	It("shows a MEMBER every row of the workspace in any state, newest first, and none of another workspace or the installation", func(ctx SpecContext) {
		queued := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "QUEUED", receivedAgo: time.Second})
		done := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DONE", receivedAgo: 30 * time.Second})
		old := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "LEASED", receivedAgo: time.Hour})
		var other int64
		Expect(pool.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'other'`).Scan(&other)).To(Succeed())
		theirs := insertDelivery(ctx, delivery{ws: other, state: "DONE"})
		installation := insertDelivery(ctx, delivery{state: "DONE"})

		b := newClient()
		b.signIn(member)
		a := b.get("/console/workspaces/acme/deliveries")
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		// The fixture's dead letter was received a minute ago.
		Expect(listed(a.Body)).To(Equal([]int64{queued, done, f.deadID, old}))
		Expect(listed(a.Body)).NotTo(ContainElements(theirs, installation))
		Expect(a.Body).To(ContainSubstring("4 deliveries, newest first."))
		Expect(a.Body).NotTo(ContainSubstring("<script"))
	})

	It("filters by state, provider, event type, error class, subject, scope, delivery key and a received-at range, as a GET form", func(ctx SpecContext) {
		key := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DONE", key: "gh-delivery-1002", receivedAgo: 2 * time.Hour})
		slack := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "QUEUED", provider: "SLACK", eventType: "message", subject: "channel:C1"})
		dead := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DEAD", errorClass: "TRANSIENT:provider-throttled", receivedAgo: 3 * time.Hour})

		b := newClient()
		b.signIn(member)
		ids := func(query url.Values) []int64 {
			GinkgoHelper()
			a := b.get("/console/workspaces/acme/deliveries?" + query.Encode())
			Expect(a.Status).To(Equal(http.StatusOK), a.Body)
			return listed(a.Body)
		}
		// The form sends every field, the empty ones included.
		all := url.Values{"state": {""}, "provider": {""}, "eventType": {""}, "errorClass": {""}, "subject": {""},
			"scopeKey": {""}, "deliveryKey": {""}, "receivedAfter": {""}, "receivedBefore": {""}}
		with := func(name, value string) url.Values {
			q := url.Values{}
			for k, v := range all {
				q[k] = v
			}
			q.Set(name, value)
			return q
		}
		Expect(ids(all)).To(HaveLen(4))
		Expect(ids(with("state", "DEAD"))).To(ConsistOf(f.deadID, dead))
		Expect(ids(with("provider", "SLACK"))).To(Equal([]int64{slack}))
		Expect(ids(with("eventType", "message"))).To(Equal([]int64{slack}))
		Expect(ids(with("errorClass", "TRANSIENT:provider-throttled"))).To(Equal([]int64{dead}))
		Expect(ids(with("subject", "channel:C1"))).To(Equal([]int64{slack}))
		Expect(ids(with("scopeKey", fmt.Sprintf("ws:%d:channel:C1", f.acme.ID)))).To(Equal([]int64{slack}))
		Expect(ids(with("deliveryKey", "gh-delivery-1002"))).To(Equal([]int64{key}))
		// A datetime-local input sends minutes without a zone: the console means UTC.
		local := func(ago time.Duration) string { return time.Now().Add(-ago).UTC().Format("2006-01-02T15:04") }
		window := with("receivedAfter", local(150*time.Minute))
		window.Set("receivedBefore", local(90*time.Minute))
		Expect(ids(window)).To(Equal([]int64{key}))
		// RFC 3339, as the API takes it, works too.
		Expect(ids(with("receivedBefore", time.Now().Add(-150*time.Minute).Format(time.RFC3339)))).To(Equal([]int64{dead}))
	})

	It("pages with the API's page and size, newest first, and the pager keeps the filter", func(ctx SpecContext) {
		var rows []int64
		for i := range 5 {
			rows = append(rows, insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DONE", receivedAgo: time.Duration(i+1) * time.Hour}))
		}
		b := newClient()
		b.signIn(member)
		first := b.get("/console/workspaces/acme/deliveries?state=DONE&size=2")
		Expect(listed(first.Body)).To(Equal(rows[:2]))
		next := regexp.MustCompile(`id="older" href="([^"]+)"`).FindStringSubmatch(first.Body)
		Expect(next).To(HaveLen(2))
		link := html(next[1])
		Expect(link).To(Equal("/console/workspaces/acme/deliveries?page=1&size=2&state=DONE"))
		second := b.get(link)
		Expect(listed(second.Body)).To(Equal(rows[2:4]))
		Expect(second.Body).To(ContainSubstring(`id="newer" href="/console/workspaces/acme/deliveries?size=2&amp;state=DONE"`))
		Expect(listed(b.get("/console/workspaces/acme/deliveries?state=DONE&size=2&page=2").Body)).To(Equal(rows[4:]))
	})

	It("answers an invalid filter with 400 and a message naming the field, never a 500, and keeps the form", func() {
		b := newClient()
		b.signIn(member)
		for query, message := range map[string]string{
			"state=BURIED":              "The state must be one of QUEUED, LEASED, DONE or DEAD.",
			"provider=git+hub":          "The provider must be one this server runs",
			"provider=BITBUCKET":        "The provider must be one this server runs",
			"errorClass=whatever":       "The error class must be one a dead letter records",
			"receivedAfter=yesterday":   "The time &#34;receivedAfter&#34; must be a date and time",
			"receivedBefore=2026-13-01": "The time &#34;receivedBefore&#34; must be a date and time",
			"colour=red":                "The filter field &#34;colour&#34; is not valid",
			"eventType=a&eventType=b":   "The filter field &#34;eventType&#34; is not valid",
			"page=-1":                   "The page number is not valid",
			"page=200":                  "the browser pages through the first 10000 matches",
			"size=100000":               "The page size must be between 1 and 200.",
		} {
			a := b.get("/console/workspaces/acme/deliveries?" + query)
			Expect(a.Status).To(Equal(http.StatusBadRequest), query)
			Expect(a.Body).To(ContainSubstring(message), query)
			Expect(a.Body).To(ContainSubstring(`aria-label="Filter deliveries"`), query)
			Expect(listed(a.Body)).To(BeEmpty(), query)
		}
	})

	It("answers a dead-letter filter naming an unknown provider or error class with 400 and a message naming the field", func() {
		b := newClient()
		b.signIn(f.ana.Token)
		for query, message := range map[string]string{
			"provider=BITBUCKET": "The provider must be one this server runs",
			"errorClass=oops":    "The error class must be one a dead letter records",
		} {
			a := b.get("/console/workspaces/acme/dead-letters?" + query)
			Expect(a.Status).To(Equal(http.StatusBadRequest), query)
			Expect(a.Body).To(ContainSubstring(message), query)
		}
	})

	It("is refused to a member of another workspace (403, nothing of the rows) and asks a visitor without a session to sign in", func(ctx SpecContext) {
		o := newClient()
		o.signIn(f.olga.Token)
		for _, path := range []string{"/console/workspaces/acme/deliveries", fmt.Sprintf("/console/workspaces/acme/deliveries/%d", f.deadID),
			"/console/workspaces/acme/rejections"} {
			a := o.get(path)
			Expect(a.Status).To(Equal(http.StatusForbidden), path)
			Expect(a.Body).NotTo(ContainSubstring("Browsed"))
			Expect(listed(a.Body)).To(BeEmpty())
		}
		// A row of acme under other's path is not there.
		Expect(o.get(fmt.Sprintf("/console/workspaces/other/deliveries/%d", f.deadID)).Status).To(Equal(http.StatusNotFound))
		Expect(newClient().get("/console/workspaces/acme/deliveries").Location).To(HavePrefix("/console/sign-in?next="))
	})

	Describe("the installation rows under /console/admin", func() {
		It("shows them to the instance administrator only, and no workspace's row there", func(ctx SpecContext) {
			installation := insertDelivery(ctx, delivery{state: "DEAD", errorClass: "PERMANENT:*json.SyntaxError"})
			admin := newClient()
			admin.signIn(adminToken)
			a := admin.get("/console/admin/deliveries")
			Expect(a.Status).To(Equal(http.StatusOK), a.Body)
			Expect(listed(a.Body)).To(Equal([]int64{installation}))
			d := admin.get(fmt.Sprintf("/console/admin/deliveries/%d", installation))
			Expect(d.Status).To(Equal(http.StatusOK))
			Expect(d.Body).To(ContainSubstring(fmt.Sprintf(`id="replay" href="/console/admin/dead-letters/%d/replay"`, installation)))
			Expect(admin.get(fmt.Sprintf("/console/admin/deliveries/%d", f.deadID)).Status).To(Equal(http.StatusNotFound))

			for _, token := range []string{f.ana.Token, member} {
				b := newClient()
				b.signIn(token)
				for _, path := range []string{"/console/admin/deliveries", "/console/admin/deliveries?state=BURIED",
					fmt.Sprintf("/console/admin/deliveries/%d", installation), "/console/admin/rejections"} {
					r := b.get(path)
					Expect(r.Status).To(Equal(http.StatusForbidden), path)
					Expect(r.Body).NotTo(ContainSubstring("Browsed"))
				}
			}
		})
	})

	Describe("one delivery", func() {
		It("shows its state, keys, every attempt with server, outcome, cause, the failure table's sentence and duration, its committed steps, payload and headers", func(ctx SpecContext) {
			id := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "QUEUED", key: "gh-attempts-1"})
			policy, err := inbox.NewRetryPolicy(time.Millisecond, time.Millisecond, 3)
			Expect(err).NotTo(HaveOccurred())
			claim := func(server string) inbox.Delivery {
				GinkgoHelper()
				var claimed []ports.Claimed
				Eventually(func() []ports.Claimed {
					claimed, err = inboxStore.Claim(ctx, server, 1, time.Minute)
					Expect(err).NotTo(HaveOccurred())
					return claimed
				}).WithTimeout(10 * time.Second).Should(HaveLen(1))
				return claimed[0].Delivery
			}
			d := claim("server-a")
			refused := &inbox.ProviderError{Provider: "github", Op: "GET /repos", Kind: inbox.ProviderRefused, Status: 422,
				Err: fmt.Errorf("token ghp_console_secret refused")}
			dec, err := d.Fail(d.Lease().Epoch(), refused, policy, time.Now())
			Expect(err).NotTo(HaveOccurred())
			_, err = inboxStore.Record(ctx, []ports.Result{{Ack: ports.Ack{ID: id, Epoch: d.Lease().Epoch()}, Decision: dec}})
			Expect(err).NotTo(HaveOccurred())
			d = claim("server-b")
			_, err = pool.Exec(ctx, `INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, 'mirror-issue')`, id)
			Expect(err).NotTo(HaveOccurred())
			_, err = inboxStore.Record(ctx, []ports.Result{{Ack: ports.Ack{ID: id, Epoch: d.Lease().Epoch()}, Decision: inbox.Completed()}})
			Expect(err).NotTo(HaveOccurred())

			b := newClient()
			b.signIn(member)
			a := b.get(fmt.Sprintf("/console/workspaces/acme/deliveries/%d", id))
			Expect(a.Status).To(Equal(http.StatusOK), a.Body)
			Expect(a.Body).To(ContainSubstring(`<dd id="state">DONE</dd>`))
			Expect(a.Body).To(ContainSubstring("<code>gh-attempts-1</code>"))
			first := rowOf(a.Body, "attempt-1")
			Expect(first).To(And(ContainSubstring("<code>server-a</code>"), ContainSubstring(`<td class="outcome">retried</td>`),
				ContainSubstring(`<td class="cause">provider-refused</td>`),
				ContainSubstring(`<td class="sentence">`+htmlEscape(inbox.CauseProviderRefused.Sentence())+`</td>`)))
			Expect(first).To(MatchRegexp(`<td>\d+(\.\d+)?(ms|µs|s)</td>|<td>0s</td>`), "a duration")
			second := rowOf(a.Body, "attempt-2")
			Expect(second).To(And(ContainSubstring("<code>server-b</code>"), ContainSubstring(`<td class="outcome">done</td>`),
				ContainSubstring(`<td class="cause">—</td>`)))
			Expect(a.Body).To(ContainSubstring("<code>mirror-issue</code>"))
			Expect(a.Body).To(ContainSubstring("&#34;title&#34;: &#34;Browsed&#34;"), "the payload pretty-printed")
			Expect(a.Body).To(ContainSubstring("<code>X-GitHub-Event</code>"))
			Expect(a.Body).NotTo(ContainSubstring("ghp_console_secret"), "never an error message")
			Expect(a.Body).NotTo(ContainSubstring(`id="replay"`), "only a DEAD row is replayed")
		})

		It("shows the delivery's trace id and links it to the operator's trace page, and says when the row was not traced", func(ctx SpecContext) {
			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			traced := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DONE", key: "gh-traced-1"})
			_, err := pool.Exec(ctx, `UPDATE provider_event SET trace_parent = $2 WHERE id = $1`,
				traced, "00-"+traceID+"-00f067aa0ba902b7-01")
			Expect(err).NotTo(HaveOccurred())
			untraced := insertDelivery(ctx, delivery{ws: f.acme.ID, state: "DONE", key: "gh-untraced-1"})

			b := newClient()
			b.signIn(member)
			a := b.get(fmt.Sprintf("/console/workspaces/acme/deliveries/%d", traced))
			Expect(a.Status).To(Equal(http.StatusOK), a.Body)
			Expect(a.Body).To(ContainSubstring(`<code id="trace-id">` + traceID + `</code>`))
			Expect(a.Body).To(ContainSubstring(`<a id="trace-link" href="` +
				template.HTMLEscapeString("https://tempo.example.com/explore?trace="+traceID+"&view=timeline") + `"`))
			u := b.get(fmt.Sprintf("/console/workspaces/acme/deliveries/%d", untraced))
			Expect(u.Status).To(Equal(http.StatusOK), u.Body)
			Expect(u.Body).NotTo(ContainSubstring(`id="trace-link"`))
			Expect(u.Body).To(ContainSubstring("not traced"))
		})

		It("offers the replay of a DEAD row to the workspace's ADMIN and not to a MEMBER", func(ctx SpecContext) {
			path := fmt.Sprintf("/console/workspaces/acme/deliveries/%d", f.deadID)
			admin := newClient()
			admin.signIn(f.ana.Token)
			a := admin.get(path)
			Expect(a.Status).To(Equal(http.StatusOK))
			Expect(a.Body).To(ContainSubstring(fmt.Sprintf(`id="replay" href="/console/workspaces/acme/dead-letters/%d/replay"`, f.deadID)))

			m := newClient()
			m.signIn(member)
			a = m.get(path)
			Expect(a.Status).To(Equal(http.StatusOK))
			Expect(a.Body).To(ContainSubstring(`<dd id="state">DEAD</dd>`))
			Expect(a.Body).NotTo(ContainSubstring(`id="replay"`))
			// Nor does the MEMBER reach the replay by its address.
			Expect(m.get(fmt.Sprintf("/console/workspaces/acme/dead-letters/%d/replay", f.deadID)).Status).To(Equal(http.StatusForbidden))
			Expect(rowState(ctx, f.deadID)).To(Equal("DEAD"))
		})
	})
})

var _ = Describe("The console's rejection log", func() {
	var (
		f                 fixture
		mine, theirs      int64 // connections of acme and of other
		member            string
		adminRejectedPage string
	)
	BeforeEach(func(ctx SpecContext) {
		f = newFixture(ctx)
		member = newAccount(ctx, "acme", "MEMBER")
		var other int64
		Expect(pool.QueryRow(ctx, `SELECT id FROM workspace WHERE slug = 'other'`).Scan(&other)).To(Succeed())
		for ws, into := range map[int64]*int64{f.acme.ID: &mine, other: &theirs} {
			Expect(pool.QueryRow(ctx, `
				INSERT INTO connection (workspace_id, kind, provider, source_server_url)
				VALUES ($1, 'GITHUB_APP', 'GITHUB', 'https://github.com') RETURNING id`, ws).Scan(into)).To(Succeed())
		}
		store, err := rejectionstore.New(pool)
		Expect(err).NotTo(HaveOccurred())
		minute := time.Now().UTC().Truncate(time.Minute)
		Expect(store.AddRejections(ctx, []ports.RejectionCount{
			{Minute: minute.Add(-2 * time.Minute), Provider: "GITHUB", ConnectionID: mine, Reason: "bad-signature", Count: 7},
			{Minute: minute.Add(-time.Minute), Provider: "GITHUB", ConnectionID: mine, Reason: "suspended", Count: 3},
			{Minute: minute.Add(-time.Minute), Provider: "GITHUB", ConnectionID: theirs, Reason: "bad-signature", Count: 11},
			{Minute: minute.Add(-time.Minute), Provider: "GITLAB", Reason: "unknown-connection", Count: 40},
		}, minute.Add(-24*time.Hour))).To(Succeed())
		adminRejectedPage = "/console/admin/rejections"
	})

	It("shows a member the refusals of the workspace's connections per minute, provider, connection and reason, newest minute first", func() {
		b := newClient()
		b.signIn(member)
		a := b.get("/console/workspaces/acme/rejections")
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		rows := regexp.MustCompile(`(?s)<tr><td>[^<]+</td><td>(\w+)</td><td>([^<]+)</td><td><code>([^<]+)</code></td><td class="count">(\d+)</td></tr>`).FindAllStringSubmatch(a.Body, -1)
		Expect(rows).To(HaveLen(2))
		Expect(rows[0][1:]).To(Equal([]string{"GITHUB", fmt.Sprintf("connection %d", mine), "suspended", "3"}))
		Expect(rows[1][1:]).To(Equal([]string{"GITHUB", fmt.Sprintf("connection %d", mine), "bad-signature", "7"}))
		Expect(a.Body).NotTo(ContainSubstring("unknown-connection"))
		Expect(a.Body).NotTo(ContainSubstring(fmt.Sprintf("connection %d", theirs)))

		// Paged as the API: one a page, and a clear 400 for a page size it does not take.
		one := b.get("/console/workspaces/acme/rejections?size=1")
		Expect(one.Body).To(ContainSubstring("<code>suspended</code>"))
		Expect(one.Body).NotTo(ContainSubstring("<code>bad-signature</code>"))
		Expect(one.Body).To(ContainSubstring(`id="older" href="?page=1&amp;size=1"`))
		Expect(b.get("/console/workspaces/acme/rejections?page=1&size=1").Body).To(ContainSubstring("<code>bad-signature</code>"))
		bad := b.get("/console/workspaces/acme/rejections?size=0")
		Expect(bad.Status).To(Equal(http.StatusBadRequest))
		Expect(bad.Body).To(ContainSubstring("The page number or size is not valid"))
	})

	It("shows the instance administrator every refusal, those no connection matched included, and refuses anyone else", func() {
		admin := newClient()
		admin.signIn(adminToken)
		a := admin.get(adminRejectedPage)
		Expect(a.Status).To(Equal(http.StatusOK), a.Body)
		Expect(a.Body).To(And(ContainSubstring("none matched"), ContainSubstring("<code>unknown-connection</code>"),
			ContainSubstring(fmt.Sprintf("connection %d", theirs)), ContainSubstring(fmt.Sprintf("connection %d", mine))))
		for _, token := range []string{f.ana.Token, f.olga.Token, member} {
			b := newClient()
			b.signIn(token)
			r := b.get(adminRejectedPage)
			Expect(r.Status).To(Equal(http.StatusForbidden))
			Expect(r.Body).NotTo(ContainSubstring("unknown-connection"))
		}
		// A member of other sees other's refusals, not acme's.
		o := newClient()
		o.signIn(f.olga.Token)
		r := o.get("/console/workspaces/other/rejections")
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Body).To(ContainSubstring(fmt.Sprintf("connection %d", theirs)))
		Expect(r.Body).NotTo(ContainSubstring(fmt.Sprintf("connection %d", mine)))
	})
})

// rowOf is the table row with the given id attribute in body.
func rowOf(body, id string) string {
	GinkgoHelper()
	m := regexp.MustCompile(`(?s)<tr id="` + regexp.QuoteMeta(id) + `">.*?</tr>`).FindString(body)
	Expect(m).NotTo(BeEmpty(), "no row "+id)
	return m
}

// html is an attribute's value as the browser reads it (the template writes & as &amp;).
func html(attr string) string { return stdhtml.UnescapeString(attr) }

// htmlEscape is text as the page's template writes it.
func htmlEscape(s string) string { return template.HTMLEscapeString(s) }
