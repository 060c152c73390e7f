package admission_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/http/webhookapi"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

// These specs run the real GitHub adapter through admission: what a GitHub App installation
// sends, as GitHub signs it.
var _ = Describe("Receiving GitHub App deliveries", func() {
	const secret = "github-app-secret"
	var (
		r          *receiver
		acme, beta int64
		app, pat   int64
	)

	issue := map[string]any{
		"action":       "opened",
		"issue":        map[string]any{"id": 1, "number": 1, "title": "Found a bug"},
		"repository":   map[string]any{"id": 1296269, "full_name": "octo/hello", "owner": map[string]any{"id": 9919, "login": "octo"}},
		"organization": map[string]any{"id": 9919, "login": "octo"},
		"installation": map[string]any{"id": 1001},
	}
	installation := map[string]any{
		"action":       "created",
		"installation": map[string]any{"id": 1001, "account": map[string]any{"id": 9919, "login": "octo"}},
		"repositories": []any{map[string]any{"id": 1296269, "full_name": "octo/hello"}},
	}

	send := func(event, deliveryID string, body []byte) response {
		GinkgoHelper()
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return r.post("/webhooks/github", bytes.NewReader(body), map[string]string{
			"X-GitHub-Event": event, "X-GitHub-Delivery": deliveryID,
			"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(m.Sum(nil)), "Content-Type": "application/json",
		})
	}

	BeforeEach(func(ctx SpecContext) {
		hook, err := github.NewWebhook(github.Config{WebhookSecret: []byte(secret)})
		Expect(err).NotTo(HaveOccurred())
		r = newReceiver(receiverOptions{hooks: webhookapi.Hooks{hook}})
		acme, beta = createWorkspace(ctx, "acme"), createWorkspace(ctx, "beta")
		// acme installed the App on the octo organization; beta monitors the same repository
		// through a personal access token and receives through acme's installation.
		app = createConnection(ctx, conn{Workspace: acme, Kind: github.KindApp, SourceKey: "1001", URL: "https://github.com"})
		pat = createConnection(ctx, conn{Workspace: beta, Kind: github.KindPAT, URL: "https://github.com"})
		subscribe(ctx, app, github.ResourceOrganization, "9919")
		subscribe(ctx, pat, github.ResourceRepository, "1296269")
	})

	It("stores the delivery for the App workspace and the PAT workspace of one repository", func(ctx SpecContext) {
		res := send("issues", "gh-1", mustJSON(issue))

		Expect(res.body).To(Equal(accepted(2, 0)))
		rows := rowsOf(ctx, "gh-1")
		Expect(workspacesOf(rows)).To(Equal([]int64{acme, beta}))
		for _, row := range rows {
			Expect(row.Provider).To(Equal("GITHUB"))
			Expect(row.Subject).To(Equal("github:repository:1296269"))
			Expect(row.Headers).To(HaveKeyWithValue("X-GitHub-Event", "issues"))
			Expect(row.Headers).NotTo(HaveKey("X-Hub-Signature-256"))
		}
		Expect(send("issues", "gh-1", mustJSON(issue)).body).To(Equal(accepted(0, 2)))
	})

	It("refuses both workspaces while the App installation is suspended", func(ctx SpecContext) {
		setState(ctx, app, connection.Suspended)

		Expect(send("issues", "gh-1", mustJSON(issue)).body).To(Equal(dropped("source-inactive")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
	})

	It("stores an installation event once, for no workspace, in the system scope", func(ctx SpecContext) {
		Expect(send("installation", "gh-c1", mustJSON(installation)).body).To(Equal(accepted(1, 0)))
		Expect(send("installation", "gh-c1", mustJSON(installation)).body).To(Equal(accepted(0, 1)))

		rows := rowsOf(ctx, "gh-c1")
		Expect(rows).To(HaveLen(1))
		Expect(rows[0].WorkspaceID).To(BeNil())
		Expect(rows[0].ScopeKey).To(Equal("system:installation"))
	})

	It("refuses a signed work payload relabeled as an installation event", func(ctx SpecContext) {
		res := send("installation", "gh-1", mustJSON(issue))

		Expect(res.status).To(Equal(http.StatusBadRequest))
		Expect(res.body).To(Equal(errorBody("invalid-event-route")))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
	})

	It("drops a work event without an installation id, whatever its headers say", func(ctx SpecContext) {
		body := map[string]any{}
		for k, v := range issue {
			if k != "installation" {
				body[k] = v
			}
		}
		res := send("issues", "gh-1", mustJSON(body))

		Expect(res.body).To(Equal(dropped(github.DropWithoutSource)))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
		Expect(r.metrics.Rejections("github", github.DropWithoutSource)).To(Equal(1))
	})

	It("answers a ping at once and stores nothing", func(ctx SpecContext) {
		res := send("ping", "gh-p", []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`))

		Expect(res.status).To(Equal(http.StatusOK))
		Expect(rowsOf(ctx, "")).To(BeEmpty())
	})
})
