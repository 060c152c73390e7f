package management_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestManagement(t *testing.T) {
	support.RunSpecs(t, "Management API")
}

// adminToken is the configured instance administrator token of the server under test.
const adminToken = "spec-instance-admin-token-0123456789"

var (
	pool      *pgxpool.Pool
	box       *secrets.AESGCM
	directory *managementstore.SourceDirectory
	server    *httptest.Server
	client    *http.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	pool = support.Pool(ctx, support.Database(ctx), 8)
	box = support.SecretBox()

	modules := fakeModules()
	var err error
	directory, err = managementstore.NewSourceDirectory(pool, box, managementstore.Config{Kinds: support.Kinds(modules...)})
	Expect(err).NotTo(HaveOccurred())
	svc := support.ManagementOf(pool, management.Config{AdminToken: adminToken}, box, modules...).Service

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	managementapi.Register(engine, svc, support.Logger{})
	server, client = support.Serve(engine)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

// fakeModule stands in for a provider module (the real ones live in adapters/<provider>): it
// declares kinds named like the real ones and validates their config the same way.
type fakeModule struct {
	provider      provider.Provider
	kinds         []connection.Kind
	resourceTypes []string
	required      map[string]string // kind -> config field it needs
	sourceOf      map[string]string // kind -> config field that is its routing key (source_key)
}

var _ contract.ProviderModule = (*fakeModule)(nil)

func (m *fakeModule) Provider() provider.Provider { return m.provider }
func (m *fakeModule) Kinds() []connection.Kind    { return m.kinds }
func (m *fakeModule) ResourceTypes() []string     { return m.resourceTypes }

func (m *fakeModule) ValidateConfig(kind connection.Kind, config map[string]any) (string, error) {
	if field, ok := m.required[kind.String()]; ok {
		v, present := config[field]
		if !present || v == nil || v == "" {
			return "", fmt.Errorf("%s needs %s: %w", kind, field, ports.ErrMalformed)
		}
	}
	field, ok := m.sourceOf[kind.String()]
	if !ok {
		return "", nil
	}
	switch v := config[field].(type) {
	case float64:
		return fmt.Sprintf("%.0f", v), nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("%s.%s has the wrong type: %w", kind, field, ports.ErrMalformed)
}

func fakeModules() []contract.ProviderModule {
	github, gitlab := provider.MustNew("GITHUB"), provider.MustNew("GITLAB")
	slack, outline := provider.MustNew("SLACK"), provider.MustNew("OUTLINE")
	return []contract.ProviderModule{
		&fakeModule{
			provider: github,
			kinds: []connection.Kind{
				connection.MustKind(connection.KindSpec{Name: "GITHUB_APP", Provider: github, AlreadyConnected: "installation-already-connected"}),
				connection.MustKind(connection.KindSpec{Name: "GITHUB_PAT", Provider: github, RequireSecret: true}),
			},
			resourceTypes: []string{"organization", "repository"},
			required:      map[string]string{"GITHUB_APP": "installationId", "GITHUB_PAT": "login"},
			sourceOf:      map[string]string{"GITHUB_APP": "installationId"},
		},
		&fakeModule{
			provider:      gitlab,
			kinds:         []connection.Kind{connection.MustKind(connection.KindSpec{Name: "GITLAB", Provider: gitlab, WebhookURL: true, RequireSecret: true, APIToken: true})},
			resourceTypes: []string{"group", "project"},
			required:      map[string]string{"GITLAB": "groupId"},
		},
		&fakeModule{
			provider:      slack,
			kinds:         []connection.Kind{connection.MustKind(connection.KindSpec{Name: "SLACK", Provider: slack, AlreadyConnected: "team-already-connected"})},
			resourceTypes: []string{"channel"},
			required:      map[string]string{"SLACK": "teamId"},
			sourceOf:      map[string]string{"SLACK": "teamId"},
		},
		&fakeModule{
			provider: outline,
			kinds: []connection.Kind{connection.MustKind(connection.KindSpec{Name: "OUTLINE", Provider: outline, WebhookURL: true,
				RequireSecret: true, APIToken: true})},
			resourceTypes: []string{"collection"},
		},
	}
}

// response is one answer of the API under test.
type response = support.Answer

// call sends body (nil: none; string: as is; otherwise JSON) with token as bearer ("" for none).
func call(method, path, token string, body any) response {
	GinkgoHelper()
	return support.API{URL: server.URL, Client: client}.Call(method, path, token, body)
}

func createWorkspace(slug string) int64 {
	GinkgoHelper()
	r := call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": slug, "name": strings.ToUpper(slug)})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	return r.ID("id")
}

// createAccount creates an account through the API and returns its id and token.
func createAccount(login string, instanceAdmin bool) (int64, string) {
	GinkgoHelper()
	r := call(http.MethodPost, "/api/admin/accounts", adminToken, map[string]any{"login": login, "instanceAdmin": instanceAdmin})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	token, _ := r.JSON["token"].(string)
	return r.ID("id"), token
}

// memberWithRole creates an account with role in the workspace and returns its token.
func memberWithRole(slug, login, role string) string {
	GinkgoHelper()
	id, token := createAccount(login, false)
	r := call(http.MethodPut, fmt.Sprintf("/api/workspaces/%s/members/%d", slug, id), adminToken, map[string]any{"role": role})
	Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	return token
}

func createConnection(slug, token string, body map[string]any) response {
	GinkgoHelper()
	return call(http.MethodPost, "/api/workspaces/"+slug+"/connections", token, body)
}

func gitlabConnection(slug string) int64 {
	GinkgoHelper()
	r := createConnection(slug, adminToken, map[string]any{
		"kind": "GITLAB", "sourceServerUrl": "https://gitlab.example.com",
		"config": map[string]any{"groupId": 42}, "secret": "gitlab-token-" + slug,
	})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	return r.ID("id")
}

func appConnection(slug string, installationID int) int64 {
	GinkgoHelper()
	r := createConnection(slug, adminToken, map[string]any{
		"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com",
		"config": map[string]any{"installationId": installationID},
	})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	return r.ID("id")
}

func connectionPath(slug string, id int64, rest string) string {
	return fmt.Sprintf("/api/workspaces/%s/connections/%d/%s", slug, id, rest)
}
