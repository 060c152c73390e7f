package support

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// InstanceAdmin is the principal of the configured administrator token.
var InstanceAdmin = ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}

// SecretBox seals connection secrets under a fresh random key, as the service's box does.
func SecretBox() *secrets.AESGCM {
	ginkgo.GinkgoHelper()
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	box, err := secrets.NewAESGCM(key)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return box
}

// Management is the management use case on pool, with adminToken as the configured instance
// administrator token and no provider modules, and its workspace store, which is also the
// member directory of the read APIs (managementapi.Members).
func Management(pool *pgxpool.Pool, adminToken string) (*management.Service, *managementstore.Workspaces) {
	ginkgo.GinkgoHelper()
	workspaces, err := managementstore.NewWorkspaces(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	connections, err := managementstore.NewConnections(pool, managementstore.Config{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	svc, err := management.New(management.Config{AdminToken: adminToken}, workspaces, workspaces, connections, SecretBox(), nil)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return svc, workspaces
}

// NewWorkspace creates the workspace slug (named slug too) as the instance administrator.
func NewWorkspace(ctx context.Context, svc *management.Service, slug string) ports.Workspace {
	ginkgo.GinkgoHelper()
	ws, err := svc.CreateWorkspace(ctx, InstanceAdmin, slug, slug)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return ws
}

// NewAccount creates an account as the instance administrator; role ("ADMIN", "MEMBER" or "")
// makes it a member of the workspace slug.
func NewAccount(ctx context.Context, svc *management.Service, login string, instanceAdmin bool, slug, role string) management.CreatedAccount {
	ginkgo.GinkgoHelper()
	acc, err := svc.CreateAccount(ctx, InstanceAdmin, login, instanceAdmin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if role != "" {
		m, err := svc.Manage(ctx, InstanceAdmin, slug)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		_, err = svc.SetMemberRole(ctx, m, acc.ID, role)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	return acc
}

// Serve runs handler on a local server and returns it with a client of its own (no shared
// connection pool between suites); the client's idle connections and the server are closed when
// the suite ends. Every request and answer through the client is checked against the API
// document (ValidatingTransport): a mismatch is the request's error.
func Serve(handler http.Handler) (*httptest.Server, *http.Client) {
	server := httptest.NewServer(handler)
	ginkgo.DeferCleanup(server.Close)
	transport := &http.Transport{}
	client := &http.Client{Transport: ValidatingTransport{Next: transport}, Timeout: 10 * time.Second}
	ginkgo.DeferCleanup(transport.CloseIdleConnections)
	return server, client
}

// Response is one answer of a read API: its status and its body, a JSON object.
type Response struct {
	Status int
	JSON   map[string]any
}

// GetJSON sends GET url with token as the bearer ("" for none) and expects a JSON object back,
// as every answer of the read APIs is (errors too: {"error": code}).
func GetJSON(client *http.Client, url, token string) Response {
	ginkgo.GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	r := Response{Status: res.StatusCode}
	gomega.Expect(json.Unmarshal(raw, &r.JSON)).To(gomega.Succeed(), string(raw))
	return r
}

// Providers is the provider set of a server that runs the four providers: what the operators'
// read filters may name.
func Providers() provider.Set {
	return provider.NewSet(provider.MustNew("GITHUB"), provider.MustNew("GITLAB"), provider.MustNew("SLACK"), provider.MustNew("OUTLINE"))
}

// Modular is the management use case as the service composes it with provider modules: the
// stores it is made of are on one pool and know the modules' connection kinds.
type Modular struct {
	Service     *management.Service
	Workspaces  *managementstore.Workspaces
	Connections *managementstore.Connections
}

// ManagementOf is the management use case on pool with cfg, box sealing the connections'
// secrets, and modules; Kinds are the modules' connection kinds.
func ManagementOf(pool *pgxpool.Pool, cfg management.Config, box ports.SecretBox, modules ...contract.ProviderModule) Modular {
	ginkgo.GinkgoHelper()
	var m Modular
	var err error
	m.Workspaces, err = managementstore.NewWorkspaces(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	m.Connections, err = managementstore.NewConnections(pool, managementstore.Config{Kinds: Kinds(modules...)})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	m.Service, err = management.New(cfg, m.Workspaces, m.Workspaces, m.Connections, box, modules)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return m
}

// Kinds are the connection kinds modules declare.
func Kinds(modules ...contract.ProviderModule) []connection.Kind {
	var kinds []connection.Kind
	for _, m := range modules {
		kinds = append(kinds, m.Kinds()...)
	}
	return kinds
}
