package management_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
)

// The Outline API token (a contract addition): write-only on creation and through
// PUT …/api-token, stored sealed for its connection, re-sealed by rotate-credentials.
var _ = Describe("A connection's provider API token", func() {
	const created, replaced = "ol_api_created_0123", "ol_api_replaced_4567"
	var ws int64

	BeforeEach(func() {
		ws = createWorkspace("acme")
	})

	outlineConnection := func(token string) response {
		GinkgoHelper()
		body := map[string]any{"kind": "OUTLINE", "sourceServerUrl": "https://docs.example.com", "config": map[string]any{},
			"secret": "outline-signing-secret"}
		if token != "" {
			body["apiToken"] = token
		}
		return createConnection("acme", adminToken, body)
	}
	sealedToken := func(ctx context.Context, id int64) []byte {
		GinkgoHelper()
		var b []byte
		Expect(pool.QueryRow(ctx, `SELECT api_token_ciphertext FROM connection WHERE id = $1 AND workspace_id = $2`, id, ws).
			Scan(&b)).To(Succeed())
		return b
	}
	opened := func(ctx context.Context, box *secrets.AESGCM, id int64) string {
		GinkgoHelper()
		plain, err := box.Open(id, sealedToken(ctx, id))
		Expect(err).NotTo(HaveOccurred())
		return string(plain)
	}

	It("is accepted on an OUTLINE connection, stored sealed and never answered", func(ctx SpecContext) {
		r := outlineConnection(created)
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		Expect(r.Raw).NotTo(ContainSubstring(created))
		Expect(r.JSON).NotTo(HaveKey("apiToken"))
		Expect(r.JSON).To(HaveKeyWithValue("hasApiToken", true))
		id := r.ID("id")
		Expect(string(sealedToken(ctx, id))).NotTo(ContainSubstring(created))
		Expect(opened(ctx, box, id)).To(Equal(created))

		list := call(http.MethodGet, "/api/workspaces/acme/connections", adminToken, nil)
		Expect(list.Status).To(Equal(http.StatusOK))
		Expect(list.Raw).NotTo(ContainSubstring(created))
		Expect(list.Raw).To(ContainSubstring(`"hasApiToken":true`))
	})

	It("shows hasApiToken false for an OUTLINE or GITLAB connection without one, and nothing for other kinds", func() {
		r := outlineConnection("")
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("hasApiToken", false))
		g := call(http.MethodGet, "/api/workspaces/acme/connections", adminToken, nil)
		Expect(g.Raw).To(ContainSubstring(`"hasApiToken":false`))
		gitlabConnection("acme")
		appConnection("acme", 1001)
		for _, item := range call(http.MethodGet, "/api/workspaces/acme/connections", adminToken, nil).JSON["items"].([]any) {
			c := item.(map[string]any)
			if c["kind"] == "GITLAB" {
				Expect(c).To(HaveKeyWithValue("hasApiToken", false))
			}
			if c["kind"] != "OUTLINE" && c["kind"] != "GITLAB" {
				Expect(c).NotTo(HaveKey("hasApiToken"))
			}
		}
	})

	DescribeTable("is refused with 400 api-token-unsupported for kinds that have no use for one",
		func(ctx SpecContext, kind string, config map[string]any, secret string) {
			body := map[string]any{"kind": kind, "sourceServerUrl": "https://example.com", "config": config, "apiToken": created}
			if secret != "" {
				body["secret"] = secret
			}
			r := createConnection("acme", adminToken, body)
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "api-token-unsupported"}))
			Expect(count(ctx, `SELECT count(*) FROM connection WHERE workspace_id = $1`, ws)).To(BeZero())
		},
		Entry("GITHUB_APP", "GITHUB_APP", map[string]any{"installationId": 1001}, ""),
		Entry("GITHUB_PAT", "GITHUB_PAT", map[string]any{"login": "octocat"}, "ghp_pat"),
		Entry("SLACK", "SLACK", map[string]any{"teamId": "T1", "appId": "A1"}, ""),
	)

	Describe("PUT …/api-token", func() {
		var id int64
		BeforeEach(func() {
			r := outlineConnection("")
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			id = r.ID("id")
		})

		It("sets the token for a workspace ADMIN and answers the connection, never the token", func(ctx SpecContext) {
			admin := memberWithRole("acme", "ana", "ADMIN")
			before := count(ctx, `SELECT config_version FROM connection WHERE id = $1`, id)
			r := call(http.MethodPut, connectionPath("acme", id, "api-token"), admin, map[string]any{"apiToken": replaced})
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.Raw).NotTo(ContainSubstring(replaced))
			Expect(r.JSON).To(HaveKeyWithValue("hasApiToken", true))
			Expect(opened(ctx, box, id)).To(Equal(replaced))
			Expect(count(ctx, `SELECT config_version FROM connection WHERE id = $1`, id)).To(Equal(before),
				"no route depends on the token, so no delivery has to be retried for it")

			// The instance administrator may too; the new token replaces the old one.
			r = call(http.MethodPut, connectionPath("acme", id, "api-token"), adminToken, map[string]any{"apiToken": created})
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(opened(ctx, box, id)).To(Equal(created))
		})

		It("answers 401 without a valid token, 403 for a MEMBER or an outsider, 404 for another workspace's connection", func(ctx SpecContext) {
			body := map[string]any{"apiToken": replaced}
			Expect(call(http.MethodPut, connectionPath("acme", id, "api-token"), "", body).Status).To(Equal(http.StatusUnauthorized))
			Expect(call(http.MethodPut, connectionPath("acme", id, "api-token"), "not-a-token", body).Status).To(Equal(http.StatusUnauthorized))
			member := memberWithRole("acme", "mia", "MEMBER")
			Expect(call(http.MethodPut, connectionPath("acme", id, "api-token"), member, body).Status).To(Equal(http.StatusForbidden))
			_, outsider := createAccount("otto", false)
			Expect(call(http.MethodPut, connectionPath("acme", id, "api-token"), outsider, body).Status).To(Equal(http.StatusForbidden))

			createWorkspace("other")
			otherAdmin := memberWithRole("other", "oli", "ADMIN")
			r := call(http.MethodPut, connectionPath("other", id, "api-token"), otherAdmin, body)
			Expect(r.Status).To(Equal(http.StatusNotFound), r.Raw)
			Expect(sealedToken(ctx, id)).To(BeNil(), "nothing was stored by a refused caller")
		})

		It("refuses other kinds, an empty token and unknown fields with 400", func(ctx SpecContext) {
			pat := createConnection("acme", adminToken, map[string]any{"kind": "GITHUB_PAT", "sourceServerUrl": "https://github.com",
				"config": map[string]any{"login": "pat-user"}, "secret": "ghp_x"})
			Expect(pat.Status).To(Equal(http.StatusCreated), pat.Raw)
			r := call(http.MethodPut, connectionPath("acme", int64(pat.JSON["id"].(float64)), "api-token"), adminToken, map[string]any{"token": replaced})
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "api-token-unsupported"}))
			r = call(http.MethodPut, connectionPath("acme", id, "api-token"), adminToken, map[string]any{"token": ""})
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(r.JSON).To(Equal(map[string]any{"error": "api-token-required"}))
			r = call(http.MethodPut, connectionPath("acme", id, "api-token"), adminToken, map[string]any{"secretToken": replaced})
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.Raw)
			Expect(sealedToken(ctx, id)).To(BeNil())
		})

		It("takes the token as {\"token\"} (CONTRACT.md), as it does {\"apiToken\"}", func(ctx SpecContext) {
			r := call(http.MethodPut, connectionPath("acme", id, "api-token"), adminToken, map[string]any{"token": replaced})
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			Expect(r.JSON["hasApiToken"]).To(BeTrue())
			Expect(sealedToken(ctx, id)).NotTo(BeNil())
			Expect(r.Raw).NotTo(ContainSubstring(replaced))
		})
	})

	It("is re-sealed by rotate-credentials with the connection's secret", func(ctx SpecContext) {
		key := func(b byte) []byte { k := make([]byte, secrets.KeySize); k[0] = b; return k }
		oldBox, err := secrets.NewKeyring([]secrets.Key{{ID: "2025", Secret: key(1)}})
		Expect(err).NotTo(HaveOccurred())
		ring, err := secrets.NewKeyring([]secrets.Key{{ID: "2026", Secret: key(2)}, {ID: "2025", Secret: key(1)}})
		Expect(err).NotTo(HaveOccurred())
		var id int64
		Expect(pool.QueryRow(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'OUTLINE', 'OUTLINE', 'https://docs.example.com') RETURNING id`, ws).Scan(&id)).To(Succeed())
		secret, err := oldBox.Seal(id, []byte("outline-signing-secret"))
		Expect(err).NotTo(HaveOccurred())
		token, err := oldBox.Seal(id, []byte(created))
		Expect(err).NotTo(HaveOccurred())
		_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2, api_token_ciphertext = $3 WHERE id = $1`, id, secret, token)
		Expect(err).NotTo(HaveOccurred())

		res, err := managementstore.ResealSecrets(ctx, pool, ring, managementstore.ResealAll)
		Expect(err).NotTo(HaveOccurred())
		Expect(res).To(Equal(managementstore.ResealResult{Checked: 2, Resealed: 2}))
		Expect(ring.FormOf(id, sealedToken(ctx, id))).To(Equal(secrets.Current))
		newOnly, err := secrets.NewKeyring([]secrets.Key{{ID: "2026", Secret: key(2)}})
		Expect(err).NotTo(HaveOccurred())
		Expect(opened(ctx, newOnly, id)).To(Equal(created), "the old key is no longer needed for the token")
		again, err := managementstore.ResealSecrets(ctx, pool, ring, managementstore.ResealAll)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(managementstore.ResealResult{Checked: 2}), "a second rotation has nothing to do")
	})
})
