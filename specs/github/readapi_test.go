package github_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// tokens authenticates the spec's callers; the account rows behind them are real.
type tokens map[string]ports.Principal

func (t tokens) Authenticate(_ context.Context, token string) (ports.Principal, error) {
	if p, ok := t[token]; ok {
		return p, nil
	}
	return ports.Principal{}, ports.ErrUnauthenticated
}

func account(ctx context.Context, login string) int64 {
	GinkgoHelper()
	return scalar[int64](ctx, `INSERT INTO account (login) VALUES ($1::text) RETURNING id`, login)
}

type page struct {
	Items []map[string]any `json:"items"`
	Page  int              `json:"page"`
	Size  int              `json:"size"`
	Total int              `json:"total"`
}

var _ = Describe("Mirror read API", func() {
	var (
		engine *gin.Engine
		acme   int64
	)

	BeforeEach(func(ctx SpecContext) {
		acme = newWorkspace(ctx, "acme")
		other := newWorkspace(ctx, "other")
		reader := account(ctx, "reader")
		admin := account(ctx, "boss")
		_, err := pool.Exec(ctx, `INSERT INTO workspace_member (workspace_id, account_id, role) VALUES ($1, $2, 'MEMBER'), ($1, $3, 'ADMIN')`,
			acme, reader, admin)
		Expect(err).NotTo(HaveOccurred())

		reg := registry(githubhandlers.Deps{})
		app := repository(4242, "acme/app", 77)
		for i := 1; i <= 3; i++ {
			Expect(leased(ctx, acme, "issues", body(obj{
				"action": "opened", "issue": issue(int64(3000+i), i, fmt.Sprintf("Issue %d", i), "2024-02-02T00:00:00Z"), "repository": app,
			})).handle(ctx, reg)).To(Succeed())
		}
		for i := 1; i <= 2; i++ {
			Expect(leased(ctx, acme, "pull_request", body(obj{
				"action": "opened", "pull_request": pullRequest(int64(9000+i), 10+i, sha(50+i)), "repository": app,
			})).handle(ctx, reg)).To(Succeed())
		}
		Expect(leased(ctx, acme, "push", body(obj{
			"ref": "refs/heads/main", "before": sha(60), "after": sha(63), "repository": app,
			"commits": []any{pushCommit(sha(61), "one"), pushCommit(sha(62), "two"), pushCommit(sha(63), "three")},
		})).handle(ctx, reg)).To(Succeed())
		Expect(leased(ctx, acme, "repository", body(obj{"action": "created", "repository": repository(4343, "acme/docs", 77)})).
			handle(ctx, reg)).To(Succeed())
		Expect(leased(ctx, other, "issues", body(obj{
			"action": "opened", "issue": issue(7001, 1, "Theirs", "2024-02-02T00:00:00Z"), "repository": repository(5252, "other/lib", 88),
		})).handle(ctx, reg)).To(Succeed())

		members, err := managementstore.NewWorkspaces(pool)
		Expect(err).NotTo(HaveOccurred())
		gin.SetMode(gin.TestMode)
		engine = gin.New()
		Expect(githubread.Register(engine, githubread.Config{
			Auth: tokens{
				"reader": {AccountID: reader},
				"root":   {AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true},
			},
			Members: members,
			Reader:  store,
		})).To(Succeed())
	})

	get := func(token, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		engine.ServeHTTP(rec, req)
		return rec
	}
	list := func(token, path string) page {
		GinkgoHelper()
		rec := get(token, path)
		Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
		var p page
		Expect(json.Unmarshal(rec.Body.Bytes(), &p)).To(Succeed())
		return p
	}

	It("lists a member's repositories in pages", func() {
		p := list("reader", "/api/workspaces/acme/repositories?page=1&size=1")
		Expect(p.Total).To(Equal(2))
		Expect(p.Page).To(Equal(1))
		Expect(p.Size).To(Equal(1))
		Expect(p.Items).To(HaveLen(1))
		Expect(p.Items[0]).To(HaveKeyWithValue("fullName", "acme/docs"))
	})

	It("lists a repository's issues, newest number first, in pages", func() {
		p := list("reader", "/api/workspaces/acme/repositories/4242/issues?size=2")
		Expect(p.Total).To(Equal(3))
		Expect(p.Items).To(HaveLen(2))
		Expect(p.Items[0]).To(HaveKeyWithValue("number", BeEquivalentTo(3)))
		Expect(p.Items[0]).To(HaveKeyWithValue("author", "octocat"))
		Expect(p.Items[0]).To(HaveKeyWithValue("labels", ConsistOf("bug")))
	})

	It("lists a repository's pull requests and commits", func() {
		pulls := list("root", "/api/workspaces/acme/repositories/4242/pulls")
		Expect(pulls.Total).To(Equal(2))
		Expect(pulls.Items[0]).To(HaveKeyWithValue("headSha", sha(52)))
		Expect(pulls.Items[0]).To(HaveKeyWithValue("checks", "none"))

		commits := list("reader", "/api/workspaces/acme/repositories/4242/commits?size=2&page=1")
		Expect(commits.Total).To(Equal(3))
		Expect(commits.Items).To(HaveLen(1))
		Expect(commits.Items[0]).NotTo(HaveKey("authorEmail"))
	})

	It("answers 404 for another workspace's repository", func() {
		for _, what := range []string{"issues", "pulls", "commits"} {
			rec := get("reader", "/api/workspaces/acme/repositories/5252/"+what)
			Expect(rec.Code).To(Equal(http.StatusNotFound), what)
			Expect(rec.Body.String()).To(MatchJSON(`{"error":"not-found"}`))
		}
	})

	It("refuses a page size over the limit", func() {
		Expect(get("reader", "/api/workspaces/acme/repositories?size=500").Code).To(Equal(http.StatusBadRequest))
	})

	It("never shows another workspace's rows in a list", func() {
		p := list("root", "/api/workspaces/other/repositories")
		Expect(p.Total).To(Equal(1))
		Expect(p.Items[0]).To(HaveKeyWithValue("fullName", "other/lib"))
	})
})
