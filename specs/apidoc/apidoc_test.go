package apidoc_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/apidoc"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// ginParam is a gin path parameter (":ws"); the document writes it "{ws}".
var ginParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

func documentPath(ginPath string) string { return ginParam.ReplaceAllString(ginPath, "{$1}") }

// documented lists "METHOD /path" of every operation in doc.
func documented(doc *openapi3.T) map[string]bool {
	out := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out[strings.ToUpper(method)+" "+path] = true
		}
	}
	return out
}

// serverConfig is a serve configuration against the suite's database with every provider's
// secrets set, so every optional route (install flows included) is registered.
func serverConfig(databaseURL string) bootstrap.Config {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"DATABASE_URL":                     databaseURL,
		"HEPHAESTUS_ADMIN_TOKEN":           "apidoc-spec-admin-token-0123456789",
		"HEPHAESTUS_CREDENTIALS_KEY":       base64.StdEncoding.EncodeToString(key),
		"HEPHAESTUS_GITHUB_APP_ID":         "1",
		"HEPHAESTUS_GITHUB_WEBHOOK_SECRET": "apidoc-spec-github-secret",
		"HEPHAESTUS_SLACK_SIGNING_SECRET":  "apidoc-spec-slack-secret",
	}
	cfg, err := bootstrap.LoadConfig(func(name string) string { return env[name] })
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

var _ = Describe("The API document", func() {
	It("is a valid OpenAPI 3.1 document", func() {
		doc, err := support.APIDocument()
		Expect(err).NotTo(HaveOccurred())
		Expect(doc.OpenAPI).To(Equal("3.1.0"))
		Expect(doc.IsOpenAPI31OrLater()).To(BeTrue())
	})

	It("names every operation with a unique lowerCamelCase operationId, the method names of generated clients", func() {
		doc, err := support.APIDocument()
		Expect(err).NotTo(HaveOccurred())
		lowerCamel := regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)
		seen := map[string]string{}
		var problems []string
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				where := strings.ToUpper(method) + " " + path
				switch {
				case op.OperationID == "":
					problems = append(problems, where+" has no operationId")
				case !lowerCamel.MatchString(op.OperationID):
					problems = append(problems, where+" has operationId "+op.OperationID+", not lowerCamelCase")
				case seen[op.OperationID] != "":
					problems = append(problems, where+" repeats the operationId of "+seen[op.OperationID])
				default:
					seen[op.OperationID] = where
				}
			}
		}
		sort.Strings(problems)
		Expect(problems).To(BeEmpty(), strings.Join(problems, "\n"))
		Expect(seen).To(HaveLen(len(documented(doc))))
	})

	It("documents every route the server registers", func(ctx SpecContext) {
		db := support.Database(ctx)
		routes, err := bootstrap.RegisteredRoutes(ctx, serverConfig(db.URL))
		Expect(err).NotTo(HaveOccurred())
		Expect(routes).NotTo(BeEmpty())

		doc, err := support.APIDocument()
		Expect(err).NotTo(HaveOccurred())
		ops := documented(doc)
		var missing []string
		registered := map[string]bool{}
		for _, r := range routes {
			if strings.HasPrefix(r.Path, "/console/") {
				// The operator console's pages and forms are HTML for a browser, not the API;
				// the document names its entry, GET /console.
				continue
			}
			key := r.Method + " " + documentPath(r.Path)
			registered[key] = true
			if !ops[key] {
				missing = append(missing, key)
			}
		}
		sort.Strings(missing)
		Expect(missing).To(BeEmpty(), "registered routes missing from the API document")
		// The management, operator, install, webhook and operational routes are all there.
		for _, key := range []string{
			"POST /webhooks/github", "POST /webhooks/gitlab/{connectionId}", "GET /api/workspaces/{ws}/integration/dead-letters/{id}",
			"POST /api/admin/erasures", "GET /api/openapi.json", "GET /healthz", "GET /readyz",
		} {
			Expect(registered).To(HaveKey(key))
		}
	})

	It("documents every route of CONTRACT.md, including those other modules are building", func() {
		doc, err := support.APIDocument()
		Expect(err).NotTo(HaveOccurred())
		Expect(documented(doc)).To(HaveKey("POST /api/workspaces/{ws}/connections/{id}/sync"))
		Expect(documented(doc)).To(HaveKey("GET /api/workspaces/{ws}/connections/{id}/sync"))
		Expect(documented(doc)).To(HaveKey("GET /api/workspaces/{ws}/changes"))
		for _, key := range []string{"POST /api/workspaces/{ws}/invitations", "GET /api/me/invitations", "POST /api/me/invitations/{id}/accept"} {
			Expect(documented(doc)).To(HaveKey(key))
		}
	})

	It("is served as JSON at /api/openapi.json without a token", func() {
		gin.SetMode(gin.TestMode)
		engine := gin.New()
		Expect(apidoc.Register(engine)).To(Succeed())
		server, client := support.Serve(engine)
		res, err := client.Get(server.URL + "/api/openapi.json")
		Expect(err).NotTo(HaveOccurred())
		defer res.Body.Close()
		Expect(res.StatusCode).To(Equal(http.StatusOK))
		Expect(res.Header.Get("Content-Type")).To(HavePrefix("application/json"))
		raw, err := io.ReadAll(res.Body)
		Expect(err).NotTo(HaveOccurred())
		var served map[string]any
		Expect(json.Unmarshal(raw, &served)).To(Succeed())
		Expect(served).To(HaveKeyWithValue("openapi", "3.1.0"))
		Expect(served["paths"]).To(HaveKey("/api/workspaces/{ws}/integration/dead-letters/{id}/replay"))
	})
})

var _ = Describe("The API specs' validating client", func() {
	var (
		server *httptest.Server
		client *http.Client
		answer string
		status int
	)
	BeforeEach(func() {
		status, answer = http.StatusOK, `{"counts":{"QUEUED":0,"LEASED":0,"DONE":0,"DEAD":0},"oldestQueuedAgeSeconds":0,"busiestScopes":[]}`
		server, client = support.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, answer)
		}))
	})
	get := func(path string) error {
		res, err := client.Get(server.URL + path)
		if err == nil {
			_ = res.Body.Close()
		}
		return err
	}

	It("lets a documented answer through", func() {
		Expect(get("/api/workspaces/acme/integration/inbox")).To(Succeed())
	})
	It("fails an answer with a field the document does not name", func() {
		answer = `{"counts":{"QUEUED":0,"LEASED":0,"DONE":0,"DEAD":0},"oldestQueuedAgeSeconds":0,"busiestScopes":[],"surprise":1}`
		err := get("/api/workspaces/acme/integration/inbox")
		Expect(support.IsDocumentError(err)).To(BeTrue(), "%v", err)
	})
	It("fails an answer missing a documented field", func() {
		answer = `{"counts":{"QUEUED":0,"LEASED":0,"DONE":0,"DEAD":0},"busiestScopes":[]}`
		Expect(support.IsDocumentError(get("/api/workspaces/acme/integration/inbox"))).To(BeTrue())
	})
	It("fails a status the operation does not document", func() {
		status, answer = http.StatusTeapot, `{"error":"teapot"}`
		Expect(support.IsDocumentError(get("/api/workspaces/acme/integration/inbox"))).To(BeTrue())
	})
	It("fails a route the document does not have, unless the server has none either", func() {
		Expect(support.IsDocumentError(get("/api/workspaces/acme/undocumented"))).To(BeTrue())
		status, answer = http.StatusNotFound, `{"error":"not-found"}`
		Expect(get("/api/workspaces/acme/undocumented")).To(Succeed())
	})
})
