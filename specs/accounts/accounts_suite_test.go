package accounts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestAccounts(t *testing.T) {
	support.RunSpecs(t, "Accounts, tokens and members")
}

// adminToken is the configured instance administrator token of both servers.
const adminToken = "spec-instance-admin-token-0123456789"

// server is one "server" of the service: its own pool, its own service and its own HTTP
// handler, sharing only the database with the other one, as two processes would.
type server struct {
	url    string
	client *http.Client
}

var (
	db   *pgtest.Database
	pool *pgxpool.Pool
	a, b server
	// workspaces is the workspace store on pool, for specs that call a store statement directly.
	workspaces *managementstore.Workspaces
)

var _ = BeforeSuite(func(ctx SpecContext) {
	db = support.Database(ctx)
	pool = support.Pool(ctx, db, 4)
	_, workspaces = support.Management(pool, adminToken)
	gin.SetMode(gin.TestMode)
	start := func() server {
		p := support.Pool(ctx, db, 8)
		svc, _ := support.Management(p, adminToken)
		engine := gin.New()
		managementapi.Register(engine, svc, support.Logger{})
		s, c := support.Serve(engine)
		return server{url: s.URL, client: c}
	}
	a, b = start(), start()
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

type response struct {
	Status int
	Header http.Header
	Raw    string
	JSON   map[string]any
}

// call sends body (nil: none; otherwise JSON) to s with token as bearer ("" for none).
func (s server) call(method, path, token string, body any) response {
	GinkgoHelper()
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.url+path, reader)
	Expect(err).NotTo(HaveOccurred())
	if reader != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	r := response{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if len(raw) > 0 && raw[0] == '{' {
		Expect(json.Unmarshal(raw, &r.JSON)).To(Succeed())
	}
	return r
}

// status is the status of a GET of path with token on s.
func (s server) status(path, token string) int {
	GinkgoHelper()
	return s.call(http.MethodGet, path, token, nil).Status
}

func (r response) id(field string) int64 {
	GinkgoHelper()
	v, ok := r.JSON[field].(float64)
	Expect(ok).To(BeTrue(), "field %q of %s is not a number", field, r.Raw)
	return int64(v)
}

func createWorkspace(slug string) {
	GinkgoHelper()
	r := a.call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": slug, "name": strings.ToUpper(slug)})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
}

type account struct {
	ID    int64
	Token string
}

// createAccount creates an account; role ("ADMIN", "MEMBER" or "") makes it a member of slug.
func createAccount(login string, instanceAdmin bool, slug, role string) account {
	GinkgoHelper()
	r := a.call(http.MethodPost, "/api/admin/accounts", adminToken, map[string]any{"login": login, "instanceAdmin": instanceAdmin})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	acc := account{ID: r.id("id"), Token: r.JSON["token"].(string)}
	if role != "" {
		r := a.call(http.MethodPut, memberPath(slug, acc.ID), adminToken, map[string]any{"role": role})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	}
	return acc
}
