package accounts_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
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
type server struct{ support.API }

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
		return server{support.API{URL: s.URL, Client: c}}
	}
	a, b = start(), start()
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})

// response is one answer of a server.
type response = support.Answer

// status is the status of a GET of path with token on s.
func (s server) status(path, token string) int {
	GinkgoHelper()
	return s.Call(http.MethodGet, path, token, nil).Status
}

func createWorkspace(slug string) {
	GinkgoHelper()
	r := a.Call(http.MethodPost, "/api/admin/workspaces", adminToken, map[string]any{"slug": slug, "name": strings.ToUpper(slug)})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
}

type account struct {
	ID    int64
	Token string
}

// createAccount creates an account; role ("ADMIN", "MEMBER" or "") makes it a member of slug.
func createAccount(login string, instanceAdmin bool, slug, role string) account {
	GinkgoHelper()
	r := a.Call(http.MethodPost, "/api/admin/accounts", adminToken, map[string]any{"login": login, "instanceAdmin": instanceAdmin})
	Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
	acc := account{ID: r.ID("id"), Token: r.JSON["token"].(string)}
	if role != "" {
		r := a.Call(http.MethodPut, memberPath(slug, acc.ID), adminToken, map[string]any{"role": role})
		Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
	}
	return acc
}

// atOnceOnBoth sends one request to each server at once, call(0, a) and call(1, b), and returns
// their statuses in that order.
func atOnceOnBoth(call func(i int, s server) int) []int {
	GinkgoHelper()
	results := make([]int, 2)
	var wg sync.WaitGroup
	for i, s := range []server{a, b} {
		wg.Go(func() {
			defer GinkgoRecover()
			results[i] = call(i, s)
		})
	}
	wg.Wait()
	return results
}

// roleIn is the role of the account in the workspace slug ("none" when it is not a member).
func roleIn(ctx context.Context, slug string, accountID int64) string {
	GinkgoHelper()
	return support.Scalar[string](ctx, pool, `SELECT coalesce((SELECT m.role FROM workspace_member m JOIN workspace w ON w.id = m.workspace_id
		WHERE w.slug = $1 AND m.account_id = $2), 'none')`, slug, accountID)
}
