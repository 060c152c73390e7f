package management_test

import (
	"crypto/sha256"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Authenticating a caller", func() {
	BeforeEach(func() { createWorkspace("acme") })

	It("answers 401 to a request without a token", func() {
		r := call(http.MethodGet, "/api/workspaces/acme/connections", "", nil)
		Expect(r.Status).To(Equal(http.StatusUnauthorized))
		Expect(r.JSON).To(Equal(map[string]any{"error": "unauthenticated"}))
		Expect(r.Header.Get("WWW-Authenticate")).To(HavePrefix("Bearer"))
	})

	It("answers 401 to a wrong token, also one that is a prefix of the administrator token", func() {
		for _, token := range []string{"hx_wrong", adminToken[:len(adminToken)-1], adminToken + "x"} {
			r := call(http.MethodGet, "/api/workspaces/acme/connections", token, nil)
			Expect(r.Status).To(Equal(http.StatusUnauthorized), token)
		}
	})

	It("answers 401 to a token sent with another scheme than Bearer", func(ctx SpecContext) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/api/workspaces/acme/connections", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Basic "+adminToken)
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	})
})

var _ = Describe("Creating an account", func() {
	It("answers the token once, stores only its SHA-256, and the token then works as a bearer", func(ctx SpecContext) {
		r := call(http.MethodPost, "/api/admin/accounts", adminToken, map[string]any{"login": "ana", "instanceAdmin": false})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("login", "ana"))
		token, _ := r.JSON["token"].(string)
		Expect(token).To(MatchRegexp(`^hx_[A-Za-z0-9_-]{43}$`))
		Expect(r.Header.Get("Cache-Control")).To(Equal("no-store"))

		var stored []byte
		Expect(pool.QueryRow(ctx, `SELECT token_hash FROM account_token WHERE account_id = $1`, r.ID("id")).Scan(&stored)).To(Succeed())
		sum := sha256.Sum256([]byte(token))
		Expect(stored).To(Equal(sum[:]))

		createWorkspace("acme")
		Expect(call(http.MethodPut, "/api/workspaces/acme/members/"+itoa(r.ID("id")), adminToken, map[string]any{"role": "ADMIN"}).Status).
			To(Equal(http.StatusOK))
		Expect(call(http.MethodGet, "/api/workspaces/acme/connections", token, nil).Status).To(Equal(http.StatusOK))
	})

	It("gives every account its own token", func() {
		_, a := createAccount("ana", false)
		_, b := createAccount("bo", false)
		Expect(a).NotTo(Equal(b))
	})

	It("answers 409 when the login exists", func() {
		createAccount("ana", false)
		r := call(http.MethodPost, "/api/admin/accounts", adminToken, map[string]any{"login": "ana"})
		Expect(r.Status).To(Equal(http.StatusConflict))
		Expect(r.JSON).To(Equal(map[string]any{"error": "conflict"}))
	})

	It("makes an account created as instance administrator one", func() {
		_, token := createAccount("root", true)
		r := call(http.MethodPost, "/api/admin/workspaces", token, map[string]any{"slug": "made-by-root", "name": "Root's"})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	})

	It("answers 403 to an account that is no instance administrator", func() {
		_, token := createAccount("ana", false)
		Expect(call(http.MethodPost, "/api/admin/accounts", token, map[string]any{"login": "eve"}).Status).To(Equal(http.StatusForbidden))
		Expect(call(http.MethodPost, "/api/admin/workspaces", token, map[string]any{"slug": "x", "name": "X"}).Status).To(Equal(http.StatusForbidden))
	})
})

var _ = Describe("Creating a workspace", func() {
	It("answers 201 with the workspace, ACTIVE", func() {
		r := call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": "acme", "name": "Acme"})
		Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
		Expect(r.JSON).To(HaveKeyWithValue("id", BeNumerically(">", 0)))
		Expect(r.JSON).To(HaveKeyWithValue("slug", "acme"))
		Expect(r.JSON).To(HaveKeyWithValue("name", "Acme"))
		Expect(r.JSON).To(HaveKeyWithValue("state", "ACTIVE"))
		Expect(r.JSON).To(HaveKeyWithValue("createdAt", MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)))
	})

	It("answers 409 when the slug exists", func() {
		createWorkspace("acme")
		r := call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": "acme", "name": "Other"})
		Expect(r.Status).To(Equal(http.StatusConflict))
		Expect(r.JSON).To(Equal(map[string]any{"error": "conflict"}))
	})

	It("answers 400 to a slug outside ^[a-z0-9][a-z0-9-]{0,62}$", func() {
		for _, slug := range []string{"", "Acme", "-acme", "acme_1", strings.Repeat("a", 64)} {
			r := call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": slug, "name": "A"})
			Expect(r.Status).To(Equal(http.StatusBadRequest), slug)
			Expect(r.JSON).To(Equal(map[string]any{"error": "invalid-slug"}))
		}
		Expect(call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": strings.Repeat("a", 63), "name": "A"}).Status).
			To(Equal(http.StatusCreated))
	})

	It("answers 400 to a body that is not the JSON it expects", func() {
		Expect(call(http.MethodPost, "/api/admin/workspaces", adminToken, `{"slug":`).JSON).To(Equal(map[string]any{"error": "invalid-json"}))
		Expect(call(http.MethodPost, "/api/admin/workspaces", adminToken, `{"slug":"a","name":"A","colour":"red"}`).Status).
			To(Equal(http.StatusBadRequest))
	})
})

var _ = Describe("Setting a member's role", func() {
	BeforeEach(func() { createWorkspace("acme") })

	It("answers 200 with the account and its role, and changes an existing role", func(ctx SpecContext) {
		id, _ := createAccount("ana", false)
		path := "/api/workspaces/acme/members/" + itoa(id)
		r := call(http.MethodPut, path, adminToken, map[string]any{"role": "MEMBER"})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		Expect(r.JSON).To(Equal(map[string]any{"accountId": float64(id), "role": "MEMBER"}))

		Expect(call(http.MethodPut, path, adminToken, map[string]any{"role": "ADMIN"}).JSON).To(HaveKeyWithValue("role", "ADMIN"))
		var role string
		Expect(pool.QueryRow(ctx, `SELECT role FROM workspace_member WHERE account_id = $1`, id).Scan(&role)).To(Succeed())
		Expect(role).To(Equal("ADMIN"))
	})

	It("answers 400 to an unknown role and 404 to an unknown account", func() {
		id, _ := createAccount("ana", false)
		Expect(call(http.MethodPut, "/api/workspaces/acme/members/"+itoa(id), adminToken, map[string]any{"role": "OWNER"}).Status).
			To(Equal(http.StatusBadRequest))
		Expect(call(http.MethodPut, "/api/workspaces/acme/members/9999", adminToken, map[string]any{"role": "ADMIN"}).Status).
			To(Equal(http.StatusNotFound))
	})

	It("lets an ADMIN of the workspace change its members' roles, not a MEMBER, and add no one", func() {
		admin := memberWithRole("acme", "ana", "ADMIN")
		member := memberWithRole("acme", "bo", "MEMBER")
		cy, _ := createAccount("cy", false)
		Expect(call(http.MethodPut, "/api/workspaces/acme/members/"+itoa(cy), adminToken, map[string]any{"role": "MEMBER"}).Status).
			To(Equal(http.StatusOK))
		path := "/api/workspaces/acme/members/" + itoa(cy)
		Expect(call(http.MethodPut, path, member, map[string]any{"role": "ADMIN"}).Status).To(Equal(http.StatusForbidden))
		Expect(call(http.MethodPut, path, admin, map[string]any{"role": "ADMIN"}).Status).To(Equal(http.StatusOK))
		dee, _ := createAccount("dee", false)
		Expect(call(http.MethodPut, "/api/workspaces/acme/members/"+itoa(dee), admin, map[string]any{"role": "MEMBER"}).Status).
			To(Equal(http.StatusNotFound), "a workspace ADMIN invites people instead")
	})
})

var _ = Describe("Authorising a workspace", func() {
	var body map[string]any

	BeforeEach(func() {
		createWorkspace("acme")
		createWorkspace("globex")
		// GitLab: a kind that workspace ADMINs may create directly (SLACK and GITHUB_APP need the
		// install flow, see specs/tenancy).
		body = map[string]any{"kind": "GITLAB", "sourceServerUrl": "https://gitlab.example.com",
			"config": map[string]any{"groupId": 42}, "secret": "gitlab-token"}
	})

	It("answers 403 to a member of the workspace who is not ADMIN", func() {
		token := memberWithRole("acme", "ana", "MEMBER")
		r := createConnection("acme", token, body)
		Expect(r.Status).To(Equal(http.StatusForbidden))
		Expect(r.JSON).To(Equal(map[string]any{"error": "forbidden"}))
		Expect(call(http.MethodGet, "/api/workspaces/acme/connections", token, nil).Status).To(Equal(http.StatusForbidden))
	})

	It("answers 403 to an ADMIN of another workspace", func() {
		token := memberWithRole("globex", "ana", "ADMIN")
		Expect(createConnection("acme", token, body).Status).To(Equal(http.StatusForbidden))
	})

	It("answers 403 to an account that belongs to no workspace", func() {
		_, token := createAccount("ana", false)
		Expect(createConnection("acme", token, body).Status).To(Equal(http.StatusForbidden))
	})

	It("lets an ADMIN of the workspace manage it", func() {
		token := memberWithRole("acme", "ana", "ADMIN")
		Expect(createConnection("acme", token, body).Status).To(Equal(http.StatusCreated))
	})

	It("answers 404 for a workspace that does not exist", func() {
		r := createConnection("initech", adminToken, body)
		Expect(r.Status).To(Equal(http.StatusNotFound))
		Expect(r.JSON).To(Equal(map[string]any{"error": "not-found"}))
	})
})

var _ = Describe("Deleting a workspace", func() {
	It("cascades to its members, connections, subscriptions, inbox rows and steps, and leaves others alone", func(ctx SpecContext) {
		acme := createWorkspace("acme")
		globex := createWorkspace("globex")
		memberWithRole("acme", "ana", "ADMIN")
		conn := gitlabConnection("acme")
		other := gitlabConnection("globex")
		for slug, id := range map[string]int64{"acme": conn, "globex": other} {
			r := call(http.MethodPut, connectionPath(slug, id, "subscriptions"), adminToken,
				map[string]any{"resources": []map[string]any{{"type": "project", "id": "7", "name": "p"}}})
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
		}
		event := insertEvent(ctx, &acme, conn, "d-1")
		otherEvent := insertEvent(ctx, &globex, other, "d-1")
		installationEvent := insertEvent(ctx, nil, 0, "d-1")

		r := call(http.MethodDelete, "/api/admin/workspaces/acme", adminToken, nil)
		Expect(r.Status).To(Equal(http.StatusNoContent), r.Raw)

		Expect(count(ctx, `SELECT count(*) FROM workspace WHERE id = $1`, acme)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM workspace_member WHERE workspace_id = $1`, acme)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM connection WHERE workspace_id = $1`, acme)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, acme)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM provider_event WHERE id = $1`, event)).To(BeZero())
		Expect(count(ctx, `SELECT count(*) FROM provider_event_step WHERE event_id = $1`, event)).To(BeZero())

		Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE workspace_id = $1`, globex)).To(Equal(1))
		Expect(count(ctx, `SELECT count(*) FROM provider_event_step WHERE event_id IN ($1, $2)`, otherEvent, installationEvent)).To(Equal(2))
		Expect(call(http.MethodDelete, "/api/admin/workspaces/acme", adminToken, nil).Status).To(Equal(http.StatusNotFound))
	})

	It("is for the instance administrator only", func() {
		createWorkspace("acme")
		token := memberWithRole("acme", "ana", "ADMIN")
		Expect(call(http.MethodDelete, "/api/admin/workspaces/acme", token, nil).Status).To(Equal(http.StatusForbidden))
	})
})
