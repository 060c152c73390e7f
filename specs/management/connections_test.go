package management_test

import (
	"errors"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Creating a connection", func() {
	BeforeEach(func() { createWorkspace("acme") })

	DescribeTable("answers 201 with the contract shape, an ACTIVE state and a webhook URL only where the provider posts per connection",
		func(ctx SpecContext, kind, serverURL string, config map[string]any, secret, webhookProvider, sourceKey string) {
			body := map[string]any{"kind": kind, "sourceServerUrl": serverURL, "config": config}
			if secret != "" {
				body["secret"] = secret
			}
			r := createConnection("acme", adminToken, body)
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			id := r.ID("id")
			Expect(r.JSON).To(HaveKeyWithValue("kind", kind))
			Expect(r.JSON).To(HaveKeyWithValue("state", "ACTIVE"))
			Expect(r.JSON).To(HaveKeyWithValue("sourceServerUrl", serverURL))
			if webhookProvider != "" {
				Expect(r.JSON).To(HaveKeyWithValue("webhookUrl", fmt.Sprintf("/webhooks/%s/%d", webhookProvider, id)))
			} else {
				Expect(r.JSON).NotTo(HaveKey("webhookUrl"))
			}

			var stored *string
			Expect(pool.QueryRow(ctx, `SELECT source_key FROM connection WHERE id = $1`, id).Scan(&stored)).To(Succeed())
			if sourceKey == "" {
				Expect(stored).To(BeNil())
			} else {
				Expect(stored).To(HaveValue(Equal(sourceKey)))
			}
		},
		Entry("GITHUB_APP", "GITHUB_APP", "https://github.com", map[string]any{"installationId": 1001}, "", "", "1001"),
		Entry("GITHUB_PAT", "GITHUB_PAT", "https://github.com", map[string]any{"login": "octocat"}, "ghp_personal-access-token", "", ""),
		Entry("GITLAB with a token", "GITLAB", "https://gitlab.example.com", map[string]any{"groupId": 42}, "plain-token", "gitlab", ""),
		Entry("GITLAB with a signing key", "GITLAB", "https://gitlab.example.com", map[string]any{"groupId": 42}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "gitlab", ""),
		Entry("SLACK", "SLACK", "https://slack.com", map[string]any{"teamId": "T1", "appId": "A1"}, "", "", "T1"),
		Entry("OUTLINE", "OUTLINE", "https://docs.example.com", map[string]any{}, "outline-signing-secret", "outline", ""),
	)

	DescribeTable("never answers the secret and stores it encrypted",
		func(ctx SpecContext, kind string, config map[string]any, secret string) {
			r := createConnection("acme", adminToken, map[string]any{
				"kind": kind, "sourceServerUrl": "https://example.com", "config": config, "secret": secret,
			})
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			Expect(r.Raw).NotTo(ContainSubstring(secret))
			Expect(r.JSON).NotTo(HaveKey("secret"))
			id := r.ID("id")

			list := call(http.MethodGet, "/api/workspaces/acme/connections", adminToken, nil)
			Expect(list.Status).To(Equal(http.StatusOK))
			Expect(list.Raw).NotTo(ContainSubstring(secret))
			suspended := call(http.MethodPost, connectionPath("acme", id, "suspend"), adminToken, nil)
			Expect(suspended.Status).To(Equal(http.StatusOK))
			Expect(suspended.Raw).NotTo(ContainSubstring(secret))

			var sealed []byte
			Expect(pool.QueryRow(ctx, `SELECT secret_ciphertext FROM connection WHERE id = $1`, id).Scan(&sealed)).To(Succeed())
			Expect(sealed).NotTo(BeEmpty())
			Expect(string(sealed)).NotTo(ContainSubstring(secret))
			plain, err := box.Open(id, sealed)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(plain)).To(Equal(secret))
		},
		Entry("GITLAB", "GITLAB", map[string]any{"groupId": 42}, "glpat-secret-value"),
		Entry("OUTLINE", "OUTLINE", map[string]any{}, "ol-secret-value"),
	)

	It("answers 400 secret-required when a GitLab or Outline connection has no secret", func() {
		for _, kind := range []string{"GITLAB", "OUTLINE"} {
			r := createConnection("acme", adminToken, map[string]any{"kind": kind, "sourceServerUrl": "https://x.example", "config": map[string]any{"groupId": 1}})
			Expect(r.Status).To(Equal(http.StatusBadRequest), kind)
			Expect(r.JSON).To(Equal(map[string]any{"error": "secret-required"}))
		}
	})

	It("answers 400 for an unknown kind, a config its provider module refuses, or a source URL that is not http(s)", func(ctx SpecContext) {
		Expect(createConnection("acme", adminToken, map[string]any{"kind": "BITBUCKET", "sourceServerUrl": "https://x.example"}).JSON).
			To(Equal(map[string]any{"error": "unknown-kind"}))
		Expect(createConnection("acme", adminToken, map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com", "config": map[string]any{}}).JSON).
			To(Equal(map[string]any{"error": "invalid-config"}))
		for _, u := range []string{"", "github.com", "/github.com", "ftp://github.com", "https://user:pw@github.com",
			"https://github.com?x=1", "https://github.com/#top", "https://github.com:0", "https://git%20hub.com"} {
			r := createConnection("acme", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": u, "config": map[string]any{"teamId": "T1"}})
			Expect(r.JSON).To(Equal(map[string]any{"error": "invalid-source-server-url"}), u)
		}
		Expect(count(ctx, `SELECT count(*) FROM connection`)).To(BeZero())
	})

	It("stores and answers the source server URL canonical: lower-case scheme and host, no default port, no trailing slash", func(ctx SpecContext) {
		for typed, canonical := range map[string]string{
			"https://GitHub.com:443/":            "https://github.com",
			"HTTP://GitLab.Example.com:80/":      "http://gitlab.example.com",
			"https://GitLab.Example.com:8443/x/": "https://gitlab.example.com:8443/x",
		} {
			r := createConnection("acme", adminToken, map[string]any{"kind": "GITLAB", "sourceServerUrl": typed,
				"config": map[string]any{"groupId": 42}, "secret": "plain-token"})
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("sourceServerUrl", canonical), typed)
			Expect(count(ctx, `SELECT count(*) FROM connection WHERE id = $1 AND source_server_url = $2`, r.ID("id"), canonical)).To(Equal(1), typed)
		}
	})

	It("answers 409 installation-already-connected for a second live App connection of the installation, in any workspace", func() {
		createWorkspace("globex")
		first := appConnection("acme", 1001)
		body := map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com", "config": map[string]any{"installationId": 1001}}
		r := createConnection("globex", adminToken, body)
		Expect(r.Status).To(Equal(http.StatusConflict))
		Expect(r.JSON).To(Equal(map[string]any{"error": "installation-already-connected"}))

		Expect(call(http.MethodPost, connectionPath("acme", first, "uninstall"), adminToken, nil).Status).To(Equal(http.StatusOK))
		Expect(createConnection("globex", adminToken, body).Status).To(Equal(http.StatusCreated))
		By("reactivating the uninstalled one while the new one is live")
		r = call(http.MethodPost, connectionPath("acme", first, "activate"), adminToken, nil)
		Expect(r.Status).To(Equal(http.StatusConflict))
		Expect(r.JSON).To(Equal(map[string]any{"error": "installation-already-connected"}))
	})
})

var _ = Describe("Listing connections", func() {
	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
	})

	It("pages the workspace's connections in id order with the total", func() {
		a, b, c := gitlabConnection("acme"), appConnection("acme", 1), appConnection("acme", 2)
		gitlabConnection("globex")

		first := call(http.MethodGet, "/api/workspaces/acme/connections?page=0&size=2", adminToken, nil)
		Expect(first.Status).To(Equal(http.StatusOK), first.Raw)
		Expect(first.JSON).To(HaveKeyWithValue("page", BeNumerically("==", 0)))
		Expect(first.JSON).To(HaveKeyWithValue("size", BeNumerically("==", 2)))
		Expect(first.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 3)))
		Expect(ids(first)).To(Equal([]int64{a, b}))
		Expect(first.JSON["items"].([]any)[0]).To(HaveKeyWithValue("webhookUrl", fmt.Sprintf("/webhooks/gitlab/%d", a)))

		second := call(http.MethodGet, "/api/workspaces/acme/connections?page=1&size=2", adminToken, nil)
		Expect(ids(second)).To(Equal([]int64{c}))

		defaults := call(http.MethodGet, "/api/workspaces/acme/connections", adminToken, nil)
		Expect(defaults.JSON).To(HaveKeyWithValue("size", BeNumerically("==", 50)))
		Expect(ids(defaults)).To(Equal([]int64{a, b, c}))

		beyond := call(http.MethodGet, "/api/workspaces/acme/connections?page=5", adminToken, nil)
		Expect(beyond.JSON).To(HaveKeyWithValue("items", BeEmpty()))
		Expect(beyond.JSON).To(HaveKeyWithValue("total", BeNumerically("==", 3)))
	})

	It("answers 400 to paging values out of bounds or not numbers", func() {
		for _, q := range []string{"size=201", "size=0", "size=abc", "page=-1", "page=x"} {
			r := call(http.MethodGet, "/api/workspaces/acme/connections?"+q, adminToken, nil)
			Expect(r.Status).To(Equal(http.StatusBadRequest), q)
			Expect(r.JSON).To(Equal(map[string]any{"error": "invalid-paging"}))
		}
		Expect(call(http.MethodGet, "/api/workspaces/acme/connections?size=200", adminToken, nil).Status).To(Equal(http.StatusOK))
	})
})

func ids(r response) []int64 {
	GinkgoHelper()
	items, ok := r.JSON["items"].([]any)
	Expect(ok).To(BeTrue(), r.Raw)
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = int64(it.(map[string]any)["id"].(float64))
	}
	return out
}

var _ = Describe("Rows of another workspace", func() {
	It("answer 404 under this workspace's slug, also to its ADMIN", func(ctx SpecContext) {
		createWorkspace("acme")
		createWorkspace("globex")
		theirs := gitlabConnection("globex")
		admin := memberWithRole("acme", "ana", "ADMIN")
		for _, token := range []string{adminToken, admin} {
			for _, action := range []string{"activate", "suspend", "uninstall"} {
				r := call(http.MethodPost, connectionPath("acme", theirs, action), token, nil)
				Expect(r.Status).To(Equal(http.StatusNotFound), action)
				Expect(r.JSON).To(Equal(map[string]any{"error": "not-found"}))
			}
			r := call(http.MethodPut, connectionPath("acme", theirs, "subscriptions"), token,
				map[string]any{"resources": []map[string]any{{"type": "project", "id": "1"}}})
			Expect(r.Status).To(Equal(http.StatusNotFound))
			Expect(ids(call(http.MethodGet, "/api/workspaces/acme/connections", token, nil))).To(BeEmpty())
		}
		Expect(count(ctx, `SELECT count(*) FROM connection_subscription`)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM connection WHERE state = 'ACTIVE'`)).To(Equal(1))
	})
})

var _ = Describe("Finding a connection for verification", func() {
	It("returns the connection with its secret decrypted and its config parsed", func(ctx SpecContext) {
		createWorkspace("acme")
		id := gitlabConnection("acme")
		c, err := directory.SourceConnection(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.ID).To(Equal(id))
		Expect(string(c.Secret)).To(Equal("gitlab-token-acme"))
		Expect(c.Config).To(HaveKeyWithValue("groupId", BeNumerically("==", 42)))
		Expect(c.Kind.String()).To(Equal("GITLAB"))
		Expect(c.Kind.HasWebhookURL()).To(BeTrue())
		Expect(c.State).To(Equal(connection.Active))
		Expect(c.SourceServerURL).To(Equal("https://gitlab.example.com"))
	})

	It("returns the configuration version admission compares under the lifecycle lock", func(ctx SpecContext) {
		createWorkspace("acme")
		id := gitlabConnection("acme")
		before, err := directory.SourceConnection(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		r := call(http.MethodPut, connectionPath("acme", id, "subscriptions"), adminToken,
			map[string]any{"resources": []map[string]any{{"type": "project", "id": "7"}}})
		Expect(r.Status).To(Equal(http.StatusOK))
		after, err := directory.SourceConnection(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(before.ConfigVersion).To(BeNumerically(">", 0))
		Expect(after.ConfigVersion).To(Equal(before.ConfigVersion + 1))
	})

	It("reports ErrNotFound for an unknown id", func(ctx SpecContext) {
		_, err := directory.SourceConnection(ctx, 4242)
		Expect(errors.Is(err, ports.ErrNotFound)).To(BeTrue(), fmt.Sprint(err))
	})
})
