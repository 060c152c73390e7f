package readkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// tokens authenticates the tokens it names.
type tokens map[string]ports.Principal

func (t tokens) Authenticate(_ context.Context, token string) (ports.Principal, error) {
	if p, ok := t[token]; ok {
		return p, nil
	}
	return ports.Principal{}, ports.ErrUnauthenticated
}

// members knows workspace "acme" (id 7), whose only member is account 1.
type members struct{}

func (members) WorkspaceBySlug(_ context.Context, slug string) (ports.Workspace, error) {
	if slug != "acme" {
		return ports.Workspace{}, ports.ErrNotFound
	}
	return ports.Workspace{ID: 7, Slug: slug}, nil
}

func (members) MemberRole(_ context.Context, ws, account int64) (workspace.Role, error) {
	if ws == 7 && account == 1 {
		return workspace.Member, nil
	}
	return workspace.Role{}, ports.ErrNotFound
}

// store lists the numbers 1 to 3 of a workspace, and of parent 5 ("five") only.
type store struct {
	calls []string
	fail  error
}

func (s *store) numbers(_ context.Context, ws int64, page ports.PageRequest) ([]int, int, error) {
	s.calls = append(s.calls, "numbers")
	if s.fail != nil {
		return nil, 0, s.fail
	}
	return []int{1, 2, 3}, 3, nil
}

func (s *store) ofID(_ context.Context, ws, id int64, page ports.PageRequest) ([]int, int, error) {
	s.calls = append(s.calls, "ofID")
	if id != 5 {
		return nil, 0, ports.ErrNotFound
	}
	return []int{int(ws)}, 1, nil
}

func (s *store) ofKey(_ context.Context, ws int64, key string, page ports.PageRequest) ([]int, int, error) {
	s.calls = append(s.calls, "ofKey")
	if key != "five" {
		return nil, 0, ports.ErrNotFound
	}
	return []int{int(ws)}, 1, nil
}

type logged struct{ lines []string }

func (l *logged) Debugw(string, ...any)       {}
func (l *logged) Infow(string, ...any)        {}
func (l *logged) Warnw(string, ...any)        {}
func (l *logged) Errorw(msg string, _ ...any) { l.lines = append(l.lines, msg) }

var _ = Describe("A read API built with the kit", func() {
	var (
		engine *gin.Engine
		s      *store
		log    *logged
	)

	BeforeEach(func() {
		gin.SetMode(gin.TestMode)
		engine, s, log = gin.New(), &store{}, &logged{}
		cfg := readkit.Config[*store]{Auth: tokens{
			"member":   {AccountID: 1},
			"outsider": {AccountID: 2},
			"root":     {AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true},
		}, Members: members{}, Store: s, Log: log}
		Expect(readkit.Mount(engine, "toyread", "/toy", cfg, func(g *readkit.Group) {
			readkit.List(g, "/numbers", cfg.Store.numbers, func(n int) int { return n * 10 })
			readkit.ListOfID(g, "/parents/:id/numbers", cfg.Store.ofID, func(n int) int { return n })
			readkit.ListOfKey(g, "/keys/:id/numbers", cfg.Store.ofKey, func(n int) int { return n })
		})).To(Succeed())
	})

	get := func(path, token string) (int, map[string]any) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		engine.ServeHTTP(rec, req)
		var body map[string]any
		Expect(json.Unmarshal(rec.Body.Bytes(), &body)).To(Succeed(), rec.Body.String())
		return rec.Code, body
	}

	It("answers a page of the store's rows, shaped by the view, to a member and to the instance administrator", func() {
		for _, token := range []string{"member", "root"} {
			status, body := get("/api/workspaces/acme/toy/numbers?size=2", token)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(Equal(map[string]any{"items": []any{10.0, 20.0, 30.0}, "page": 0.0, "size": 2.0, "total": 3.0}))
		}
	})

	It("answers 401 without a token, 403 to a non-member and 404 for an unknown workspace, before the store is read", func() {
		status, body := get("/api/workspaces/acme/toy/numbers", "")
		Expect(status).To(Equal(http.StatusUnauthorized))
		Expect(body).To(Equal(map[string]any{"error": "unauthenticated"}))
		status, body = get("/api/workspaces/acme/toy/numbers", "outsider")
		Expect(status).To(Equal(http.StatusForbidden))
		Expect(body).To(Equal(map[string]any{"error": "forbidden"}))
		status, body = get("/api/workspaces/other/toy/numbers", "member")
		Expect(status).To(Equal(http.StatusNotFound))
		Expect(body).To(Equal(map[string]any{"error": "not-found"}))
		Expect(s.calls).To(BeEmpty())
	})

	It("binds a parent's list to the workspace the member check authorised", func() {
		status, body := get("/api/workspaces/acme/toy/parents/5/numbers", "member")
		Expect(status).To(Equal(http.StatusOK))
		Expect(body["items"]).To(Equal([]any{7.0}))
		status, body = get("/api/workspaces/acme/toy/keys/five/numbers", "member")
		Expect(status).To(Equal(http.StatusOK))
		Expect(body["items"]).To(Equal([]any{7.0}))
	})

	When("the parent id is not a positive integer", func() {
		It("answers 404 without reading the store", func() {
			for _, id := range []string{"0", "-5", "five", "5x", "99999999999999999999"} {
				status, body := get("/api/workspaces/acme/toy/parents/"+id+"/numbers", "member")
				Expect(status).To(Equal(http.StatusNotFound), id)
				Expect(body).To(Equal(map[string]any{"error": "not-found"}), id)
			}
			Expect(s.calls).To(BeEmpty())
		})
	})

	When("the store does not have the parent", func() {
		It("answers 404", func() {
			status, body := get("/api/workspaces/acme/toy/parents/6/numbers", "member")
			Expect(status).To(Equal(http.StatusNotFound))
			Expect(body).To(Equal(map[string]any{"error": "not-found"}))
			status, _ = get("/api/workspaces/acme/toy/keys/six/numbers", "member")
			Expect(status).To(Equal(http.StatusNotFound))
		})
	})

	When("the store fails", func() {
		It("answers 500 internal and logs the cause under the provider's name", func() {
			s.fail = errors.New("connection reset")
			status, body := get("/api/workspaces/acme/toy/numbers", "member")
			Expect(status).To(Equal(http.StatusInternalServerError))
			Expect(body).To(Equal(map[string]any{"error": "internal"}))
			Expect(log.lines).To(Equal([]string{"toy mirror read failed"}))
		})
	})

	It("refuses to mount without an authenticator, a member directory or a store", func() {
		none := func(*readkit.Group) { Fail("routes added without their dependencies") }
		Expect(readkit.Mount(gin.New(), "toyread", "/toy", readkit.Config[*store]{Members: members{}, Store: s}, none)).
			To(MatchError("toyread: an authenticator, a member directory and a store are required"))
		Expect(readkit.Mount(gin.New(), "toyread", "/toy", readkit.Config[*store]{Auth: tokens{}, Store: s}, none)).To(HaveOccurred())
		Expect(readkit.Mount(gin.New(), "toyread", "/toy", readkit.Config[*store]{Auth: tokens{}, Members: members{}}, none)).To(HaveOccurred())
	})
})

var _ = Describe("The views' JSON helpers", func() {
	It("show a time as RFC 3339 in UTC, and no time or the zero update time as null", func() {
		t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
		Expect(*readkit.Timestamp(&t)).To(Equal("2026-01-02T02:04:05Z"))
		Expect(readkit.Timestamp(nil)).To(BeNil())
		Expect(*readkit.Updated(t)).To(Equal("2026-01-02T02:04:05Z"))
		Expect(readkit.Updated(time.Time{})).To(BeNil())
		Expect(*readkit.Optional("x")).To(Equal("x"))
		Expect(readkit.Optional("")).To(BeNil())
	})

	It("add the views' person members to the payload declaration", func() {
		type view struct {
			Author string `json:"author" person:"login"`
			Title  string `json:"title"`
		}
		f, err := readkit.PersonFields(contract.PersonFields{References: []string{"user"}}, view{})
		Expect(err).NotTo(HaveOccurred())
		Expect(f.References).To(Equal([]string{"user"}))
		Expect(f.Views).NotTo(BeNil())
		Expect(f.Views.Logins).To(Equal([]string{"author"}))
	})
})
