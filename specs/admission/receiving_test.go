package admission_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

var _ = Describe("Receiving a webhook", func() {
	var (
		r                *receiver
		acme, beta, orph int64 // workspaces
		app, pat, orphan int64 // connections: acme's App source, beta's PAT, orph's PAT on another repo
		repo             = hubResource{Type: "repository", ID: "1296269"}
		work             = hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{repo}}
	)

	BeforeEach(func(ctx SpecContext) {
		r = newReceiver(receiverOptions{})
		acme, beta, orph = createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta"), createWorkspace(ctx, "orph")
		app = createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001", URL: "https://hub.example"})
		pat = createConnection(ctx, conn{Workspace: beta, Kind: kindHubPAT, URL: "https://hub.example/"})
		orphan = createConnection(ctx, conn{Workspace: orph, Kind: kindHubPAT})
		subscribe(ctx, app, "repository", repo.ID)
		subscribe(ctx, pat, "repository", repo.ID)
		subscribe(ctx, orphan, "repository", "42")
	})

	It("stores one row per subscribing workspace and answers 202 only once the rows are visible to another connection", func(ctx SpecContext) {
		res := r.deliver("d-1", work)

		// Read at once, from another pool: what the 202 promised is committed.
		rows := rowsOf(ctx, "d-1")
		Expect(res.status).To(Equal(http.StatusAccepted))
		Expect(res.body).To(Equal(accepted(2, 0)))
		Expect(workspacesOf(rows)).To(Equal([]int64{acme, beta}))
		Expect(*rows[0].ConnectionID).To(Equal(app))
		Expect(*rows[1].ConnectionID).To(Equal(pat))
		Expect(rows[0].ScopeKey).To(Equal(fmt.Sprintf("ws:%d:testhub:resource:%s", acme, repo.ID)))
		Expect(rows[1].State).To(Equal("QUEUED"))
		Expect(rows[0].Payload).To(MatchJSON(mustJSON(work)))
		Expect(r.notified.Load()).To(BeNumerically(">=", 1))
		Expect(r.metrics.ReceivedCount("testhub")).To(Equal(1))
		Expect(r.metrics.AllRejections()).To(BeEmpty())
	})

	It("stores one row for a workspace reached through several connections, through its lowest connection", func(ctx SpecContext) {
		second := createConnection(ctx, conn{Workspace: acme, Kind: kindHubPAT, URL: "https://second.example"})
		subscribe(ctx, second, "repository", repo.ID)

		Expect(r.deliver("d-1", work).body).To(Equal(accepted(2, 0)))

		rows := rowsOf(ctx, "d-1")
		Expect(workspacesOf(rows)).To(Equal([]int64{acme, beta}))
		Expect(*rows[0].ConnectionID).To(Equal(app))
	})

	It("stores nothing new for a redelivery", func(ctx SpecContext) {
		Expect(r.deliver("d-1", work).body).To(Equal(accepted(2, 0)))
		notified := r.notified.Load()

		res := r.deliver("d-1", work)

		Expect(res.status).To(Equal(http.StatusAccepted))
		Expect(res.body).To(Equal(accepted(0, 2)))
		Expect(rowsOf(ctx, "d-1")).To(HaveLen(2))
		Expect(r.notified.Load()).To(Equal(notified), "nothing new to claim, no wake-up")
	})

	It("refuses a wrong signature with 401, stores nothing and counts the refusal", func(ctx SpecContext) {
		body := mustJSON(work)
		res := r.post("/webhooks/testhub", bytes.NewReader(body), map[string]string{
			headerSignature: sign("not-the-secret", body), headerDelivery: "d-1",
		})

		Expect(res.status).To(Equal(http.StatusUnauthorized))
		Expect(res.body).To(Equal(errorBody("unauthenticated")), "no detail that helps forging")
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("testhub", "bad-signature")).To(Equal(1))
		Expect(r.logs.Text()).To(ContainSubstring("bad-signature"))
	})

	Describe("a body over the limit", func() {
		It("is refused with 413 when its declared length is over the limit", func(ctx SpecContext) {
			body := mustJSON(hubBody{Event: "issues", Extra: map[string]any{"pad": strings.Repeat("x", maxBytes)}})
			res := r.post("/webhooks/testhub", bytes.NewReader(body), map[string]string{headerSignature: sign(appSecret, body)})

			Expect(res.status).To(Equal(http.StatusRequestEntityTooLarge))
			Expect(res.body).To(Equal(errorBody("too-large")))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
			Expect(r.metrics.Rejections("testhub", "too-large")).To(Equal(1))
		})

		It("is refused with 413 when it streams past the limit without a length", func(ctx SpecContext) {
			body := mustJSON(hubBody{Event: "issues", Extra: map[string]any{"pad": strings.Repeat("x", maxBytes)}})
			// A reader of unknown length makes the client send the body chunked.
			res := r.post("/webhooks/testhub", io.MultiReader(bytes.NewReader(body)), map[string]string{headerSignature: sign(appSecret, body)})

			Expect(res.status).To(Equal(http.StatusRequestEntityTooLarge))
			Expect(res.body).To(Equal(errorBody("too-large")))
			Expect(r.metrics.Rejections("testhub", "too-large")).To(Equal(1))
		})

		It("is accepted at exactly the limit", func(ctx SpecContext) {
			body := mustJSON(work)
			body = append(body[:len(body)-1], []byte(`,"extra":{"pad":"`)...)
			body = append(body, bytes.Repeat([]byte("x"), maxBytes-len(body)-3)...)
			body = append(body, []byte(`"}}`)...)
			Expect(body).To(HaveLen(maxBytes))
			res := r.post("/webhooks/testhub", bytes.NewReader(body), map[string]string{
				headerSignature: sign(appSecret, body), headerDelivery: "d-1",
			})
			Expect(res.body).To(Equal(accepted(2, 0)))
		})
	})

	DescribeTable("refuses a signed body that PostgreSQL could not read back as text, storing nothing",
		func(ctx SpecContext, body []byte, reason string) {
			res := r.post("/webhooks/testhub", bytes.NewReader(body), map[string]string{
				headerSignature: sign(appSecret, body), headerDelivery: "d-1",
			})

			Expect(res.status).To(Equal(http.StatusBadRequest))
			Expect(res.body).To(Equal(errorBody(reason)))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
			Expect(r.metrics.Rejections("testhub", reason)).To(Equal(1))
		},
		Entry("invalid UTF-8", []byte("{\"event\":\"issues\",\"installation\":\"1001\",\"t\":\"\xff\"}"), "invalid-utf8"),
		Entry("a raw NUL byte", []byte("{\"event\":\"issues\",\"installation\":\"1001\",\"t\":\"a\x00\"}"), "nul"),
		Entry("an escaped NUL", []byte(`{"event":"issues","installation":"1001","t":"a\u0000"}`), "nul"),
		Entry("invalid JSON", []byte(`{"event":"issues",`), "invalid-json"),
		Entry("a lone surrogate escape jsonb refuses", []byte(`{"event":"issues","installation":"1001","t":"\ud800"}`), "invalid-escape"),
		Entry("a number jsonb's numeric cannot hold", []byte(`{"event":"issues","installation":"1001","n":1e131072}`), "number-out-of-range"),
	)

	It("refuses a signed work payload relabeled as a control event with invalid-event-route", func(ctx SpecContext) {
		res := r.deliver("d-1", hubBody{Event: "installation", Installation: "1001", Relabeled: true})

		Expect(res.status).To(Equal(http.StatusBadRequest))
		Expect(res.body).To(Equal(errorBody("invalid-event-route")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("testhub", "invalid-event-route")).To(Equal(1))
	})

	It("answers what the provider expects at once for a ping, storing nothing", func(ctx SpecContext) {
		res := r.deliver("d-1", hubBody{Event: "ping", Ping: true})

		Expect(res.status).To(Equal(http.StatusOK))
		Expect(res.raw).To(MatchJSON(`{"pong":true}`))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
	})

	It("drops what a provider rule drops with 202 and counts it", func(ctx SpecContext) {
		res := r.deliver("d-1", hubBody{Event: "issues", Drop: "work-event-without-source"})

		Expect(res.status).To(Equal(http.StatusAccepted))
		Expect(res.body).To(Equal(dropped("work-event-without-source")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("testhub", "work-event-without-source")).To(Equal(1))
	})

	It("drops a delivery whose signed source no connection has", func(ctx SpecContext) {
		res := r.deliver("d-1", hubBody{Event: "issues", Installation: "9999", Resources: []hubResource{repo}})

		Expect(res.body).To(Equal(dropped("no-source")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("testhub", "no-source")).To(Equal(1))
	})

	It("drops a delivery no workspace subscribes to", func(ctx SpecContext) {
		res := r.deliver("d-1", hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "7"}}})

		Expect(res.body).To(Equal(dropped("no-subscriber")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("testhub", "no-subscriber")).To(Equal(1))
	})

	It("makes a subscription change visible to the next delivery, without any consumer running", func(ctx SpecContext) {
		other := hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "7"}}}
		Expect(r.deliver("d-1", other).body).To(Equal(dropped("no-subscriber")))

		subscribe(ctx, orphan, "repository", "7")

		Expect(r.deliver("d-2", other).body).To(Equal(accepted(1, 0)))
		Expect(workspacesOf(rowsOf(ctx, "d-2"))).To(Equal([]int64{orph}))
	})

	Describe("an inactive connection", func() {
		It("adds no payload and no dedupe row, so the same delivery is stored after re-activation", func(ctx SpecContext) {
			setState(ctx, app, connection.Suspended) // the source: refuses every recipient
			res := r.deliver("d-1", work)

			Expect(res.status).To(Equal(http.StatusAccepted))
			Expect(res.body).To(Equal(dropped("source-inactive")))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
			Expect(r.metrics.Rejections("testhub", "source-inactive")).To(Equal(1))
			Expect(r.logs.Text()).To(And(ContainSubstring("source-inactive"), ContainSubstring("d-1")))

			setState(ctx, app, connection.Active)
			Expect(r.deliver("d-1", work).body).To(Equal(accepted(2, 0)))
		})

		It("refuses PAT workspaces too when the source is not ACTIVE", func(ctx SpecContext) {
			setState(ctx, app, connection.Uninstalled)

			Expect(r.deliver("d-1", work).body).To(Equal(dropped("source-inactive")))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
		})

		It("refuses only the workspace of a suspended recipient connection, and counts it", func(ctx SpecContext) {
			setState(ctx, pat, connection.Suspended)

			Expect(r.deliver("d-1", work).body).To(Equal(accepted(1, 0)))
			Expect(workspacesOf(rowsOf(ctx, "d-1"))).To(Equal([]int64{acme}))
			Expect(r.metrics.Rejections("testhub", "connection-inactive")).To(Equal(1))

			setState(ctx, pat, connection.Active)
			Expect(r.deliver("d-1", work).body).To(Equal(accepted(1, 1)), "the refused workspace kept no dedupe row")
		})

		It("drops the delivery when every subscribing connection is inactive", func(ctx SpecContext) {
			setState(ctx, pat, connection.Suspended)
			only := hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{{Type: "repository", ID: "8"}}}
			subscribe(ctx, pat, "repository", "8")

			Expect(r.deliver("d-1", only).body).To(Equal(dropped("connection-inactive")))
			Expect(rowsOf(ctx, "")).To(BeEmpty())
		})
	})

	Describe("an installation control event", func() {
		control := hubBody{Event: "installation", Installation: "1001", Control: true}

		It("is stored once with a NULL workspace in the system scope, and its redelivery is a duplicate", func(ctx SpecContext) {
			Expect(r.deliver("c-1", control).body).To(Equal(accepted(1, 0)))

			rows := rowsOf(ctx, "c-1")
			Expect(rows).To(HaveLen(1))
			Expect(rows[0].WorkspaceID).To(BeNil())
			Expect(*rows[0].ConnectionID).To(Equal(app))
			Expect(rows[0].ScopeKey).To(Equal("system:installation"))
			Expect(rows[0].Headers).To(HaveKeyWithValue("Hephaestus-Source-Server-Url", "https://hub.example"))

			Expect(r.deliver("c-1", control).body).To(Equal(accepted(0, 1)))
			Expect(rowsOf(ctx, "c-1")).To(HaveLen(1))
		})

		It("is stored even when no connection has the installation or its connection is uninstalled", func(ctx SpecContext) {
			Expect(r.deliver("c-1", hubBody{Event: "installation", Installation: "5555", Control: true}).body).To(Equal(accepted(1, 0)))
			setState(ctx, app, connection.Uninstalled)
			Expect(r.deliver("c-2", control).body).To(Equal(accepted(1, 0)))

			rows := rowsOf(ctx, "c-1")
			Expect(rows).To(HaveLen(1))
			Expect(rows[0].ConnectionID).To(BeNil())
			Expect(rows[0].Headers).To(HaveKeyWithValue("Hephaestus-Source-Server-Url", "https://github.com"))
			Expect(rowsOf(ctx, "c-2")[0].WorkspaceID).To(BeNil())
		})
	})

	Describe("stored headers", func() {
		It("take Hephaestus-Source-Server-Url from each row's connection, even when the request sends it", func(ctx SpecContext) {
			Expect(r.deliver("d-1", work, map[string]string{"Hephaestus-Source-Server-Url": "https://forged.example"}).body).
				To(Equal(accepted(2, 0)))

			rows := rowsOf(ctx, "d-1")
			Expect(rows[0].Headers).To(HaveKeyWithValue("Hephaestus-Source-Server-Url", "https://hub.example"))
			Expect(rows[1].Headers).To(HaveKeyWithValue("Hephaestus-Source-Server-Url", "https://hub.example/"))
			for _, row := range rows {
				for k, v := range row.Headers {
					Expect(v).NotTo(Equal("https://forged.example"), k)
				}
			}
		})

		It("never keep a signature, token, cookie or authorization header, and the log never names one", func(ctx SpecContext) {
			body := mustJSON(work)
			signature := sign(appSecret, body)
			res := r.post("/webhooks/testhub", bytes.NewReader(body), map[string]string{
				headerSignature: signature, headerDelivery: "d-1", "X-Testhub-Event": "issues",
				"Authorization": "Bearer tok-123", "Cookie": "session=abc", "X-Testhub-Token": "tok-456",
			})
			Expect(res.body).To(Equal(accepted(2, 0)))

			for _, row := range rowsOf(ctx, "d-1") {
				Expect(row.Headers).To(HaveKeyWithValue("X-Testhub-Event", "issues"))
				Expect(row.Headers).To(HaveKey(headerDelivery))
				Expect(row.Headers).NotTo(HaveKey(headerSignature))
				Expect(row.Headers).NotTo(HaveKey("Authorization"))
				Expect(row.Headers).NotTo(HaveKey("Cookie"))
				Expect(row.Headers).NotTo(HaveKey("X-Testhub-Token"))
			}
			// A refused request is logged too; neither line carries the credentials.
			r.post("/webhooks/testhub", bytes.NewReader(body), map[string]string{headerSignature: sign("wrong", body)})
			Expect(r.logs.Text()).NotTo(Or(ContainSubstring(signature), ContainSubstring(appSecret),
				ContainSubstring("tok-123"), ContainSubstring("tok-456"), ContainSubstring("session=abc")))
		})
	})
})

var _ = Describe("Receiving a webhook on a connection's own URL", func() {
	var (
		r                *receiver
		acme, beta       int64
		lab, betaLab     int64
		project          = hubResource{Type: "project", ID: "42"}
		work             = hubBody{Event: "Issue Hook", Resources: []hubResource{project}}
		secret, betaSecr = "lab-secret", "beta-secret"
	)

	BeforeEach(func(ctx SpecContext) {
		r = newReceiver(receiverOptions{})
		acme, beta = createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta")
		lab = createConnection(ctx, conn{Workspace: acme, Kind: kindLab, Secret: secret, URL: "https://lab.example"})
		betaLab = createConnection(ctx, conn{Workspace: beta, Kind: kindLab, Secret: betaSecr})
		subscribe(ctx, lab, "project", project.ID)
		subscribe(ctx, betaLab, "project", project.ID)
	})

	It("stores the delivery only for the workspace routed through the URL's connection", func(ctx SpecContext) {
		res := r.deliverTo(lab, secret, "g-1", work)

		Expect(res.body).To(Equal(accepted(1, 0)))
		rows := rowsOf(ctx, "g-1")
		Expect(workspacesOf(rows)).To(Equal([]int64{acme}))
		Expect(rows[0].Headers).To(HaveKeyWithValue("Hephaestus-Source-Server-Url", "https://lab.example"))
	})

	It("verifies with the URL's connection's secret", func(ctx SpecContext) {
		res := r.deliverTo(lab, betaSecr, "g-1", work)

		Expect(res.status).To(Equal(http.StatusUnauthorized))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("testlab", "bad-signature")).To(Equal(1))
	})

	It("stores a connection-wide event for the connection's workspace without a subscription", func(ctx SpecContext) {
		res := r.deliverTo(betaLab, betaSecr, "g-1", hubBody{Event: "System Hook", ConnectionWide: true})

		Expect(res.body).To(Equal(accepted(1, 0)))
		Expect(workspacesOf(rowsOf(ctx, "g-1"))).To(Equal([]int64{beta}))
	})

	It("drops the delivery of a suspended connection", func(ctx SpecContext) {
		setState(ctx, lab, connection.Suspended)

		Expect(r.deliverTo(lab, secret, "g-1", work).body).To(Equal(dropped("source-inactive")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
	})

	DescribeTable("answers 404 for a connection id that names no connection of the provider",
		func(ctx SpecContext, path func(context.Context) string) {
			body := mustJSON(work)
			res := r.post(path(ctx), bytes.NewReader(body), map[string]string{headerSignature: sign(secret, body)})

			Expect(res.status).To(Equal(http.StatusNotFound))
			Expect(res.body).To(Equal(errorBody("not-found")))
			Expect(r.metrics.Rejections("testlab", "not-found")).To(Equal(1))
		},
		Entry("unknown", func(context.Context) string { return "/webhooks/testlab/999999" }),
		Entry("not a number", func(context.Context) string { return "/webhooks/testlab/abc" }),
		Entry("of another provider", func(ctx context.Context) string {
			return fmt.Sprintf("/webhooks/testlab/%d", createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "77"}))
		}),
	)
})
