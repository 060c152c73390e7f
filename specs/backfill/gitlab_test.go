package backfill_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabsync"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// fakeGitLab serves projects' issues and merge requests in pages with X-Next-Page, and checks
// the PRIVATE-TOKEN of every request.
type fakeGitLab struct {
	server *httptest.Server
	mu     sync.Mutex
	lists  map[string][]obj // "/projects/77/issues"
	seen   []string
	badTok int
}

const gitlabToken = "glpat-spec"

func newFakeGitLab() *fakeGitLab {
	f := &fakeGitLab{lists: map[string][]obj{}}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.seen = append(f.seen, r.URL.Path+"?page="+r.URL.Query().Get("page"))
		if r.Header.Get("PRIVATE-TOKEN") != gitlabToken {
			f.badTok++
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"401 Unauthorized"}`))
			return
		}
		list, ok := f.lists[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		from := min((page-1)*per, len(list))
		to := min(from+per, len(list))
		if to < len(list) {
			w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
		} else {
			w.Header().Set("X-Next-Page", "")
		}
		out := list[from:to]
		if out == nil {
			out = []obj{}
		}
		writeJSON(w, out)
	}))
	DeferCleanup(f.server.Close)
	return f
}

func (f *fakeGitLab) project(id int64, issues, mrs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var is, ms []obj
	for i := 1; i <= issues; i++ {
		is = append(is, obj{"id": id*10000 + int64(i), "iid": i, "project_id": id, "title": fmt.Sprintf("Issue %d", i),
			"description": "d", "state": "opened", "author": obj{"id": 5, "username": "ana"}, "labels": []string{"bug"},
			"web_url": "https://gitlab.example/i", "created_at": "2024-02-01T00:00:00.000Z", "updated_at": "2024-02-02T00:00:00.000Z"})
	}
	for i := 1; i <= mrs; i++ {
		ms = append(ms, obj{"id": id*20000 + int64(i), "iid": i, "project_id": id, "title": fmt.Sprintf("MR %d", i),
			"state": "opened", "draft": false, "source_branch": "feature", "target_branch": "main",
			"sha": fmt.Sprintf("%040x", i), "merge_status": "can_be_merged", "author": obj{"id": 5},
			"web_url": "https://gitlab.example/mr", "created_at": "2024-03-01T00:00:00.000Z", "updated_at": "2024-03-02T00:00:00.000Z"})
	}
	f.lists[fmt.Sprintf("/projects/%d/issues", id)] = is
	f.lists[fmt.Sprintf("/projects/%d/merge_requests", id)] = ms
}

func gitlabConnection(ctx context.Context, ws int64) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config)
		VALUES ($1, 'GITLAB', 'GITLAB', 'ACTIVE', 'https://gitlab.example', '{"groupId":42}') RETURNING id`, ws).Scan(&id)).To(Succeed())
	return id
}

func subscribeProject(ctx context.Context, ws, conn, project int64) {
	GinkgoHelper()
	_, err := pool.Exec(ctx, `
		INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id)
		VALUES ($1, $2, 'GITLAB', 'project', $3)`, conn, ws, strconv.FormatInt(project, 10))
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Backfill of a GitLab project", func() {
	var (
		gl       *fakeGitLab
		acme     int64
		conn     int64
		other    int64
		r        *backfill.Runner
		metrics  *telemetry.Metrics
		gitlabOf func(ctx context.Context, project int64) int
	)

	BeforeEach(func(ctx SpecContext) {
		gl = newFakeGitLab()
		gl.project(77, 150, 3)
		gl.project(88, 10, 1)
		acme = support.NewWorkspace(ctx, manage, "acme").ID
		conn = gitlabConnection(ctx, acme)
		other = gitlabConnection(ctx, acme)
		store, err := gitlabmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		client, err := gitlabapi.New(gitlabapi.Config{BaseURL: gl.server.URL, MaxBodyBytes: 8 << 20,
			Token: func(context.Context) (string, error) { return gitlabToken, nil }})
		Expect(err).NotTo(HaveOccurred())
		src, err := gitlabsync.New(client, store)
		Expect(err).NotTo(HaveOccurred())
		metrics = telemetry.NewMetrics()
		metrics.Declare(telemetry.Labels{Providers: []string{"github", "gitlab"}})
		r, err = backfill.New(backfill.Config{Owner: "server-a", LeaseDuration: specLeaseTime, CallTimeout: 5 * time.Second,
			Retry: testRetry}, jobs, []ports.SyncSource{src}, metrics, support.Logger{}, clock{})
		Expect(err).NotTo(HaveOccurred())
		gitlabOf = func(ctx context.Context, project int64) int {
			GinkgoHelper()
			return count(ctx, `SELECT (SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = $2)
				+ (SELECT count(*) FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = $2)`, acme, project)
		}
	})

	drain := func(ctx context.Context, cond func() bool) {
		GinkgoHelper()
		Eventually(func(g Gomega) bool {
			g.Expect(r.Drain(ctx)).To(Succeed())
			return cond()
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
	}

	It("reads issues and merge requests page by page following X-Next-Page, with the API token", func(ctx SpecContext) {
		subscribeProject(ctx, acme, conn, 77)
		drain(ctx, func() bool { return job(ctx, conn, 77).State == "DONE" })
		j := job(ctx, conn, 77)
		Expect(j.Items).To(BeEquivalentTo(153))
		Expect(j.Pages).To(BeEquivalentTo(3)) // issues 1, issues 2, merge requests 1
		Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 77`, acme)).To(Equal(150))
		Expect(count(ctx, `SELECT count(*) FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = 77`, acme)).To(Equal(3))
		Expect(support.Scalar[string](ctx, pool, `SELECT array_to_string(labels, ',') FROM gitlab_issue WHERE id = 770001`)).To(Equal("bug"))
		Expect(gl.badTok).To(BeZero())
		Expect(strings.Join(gl.seen, " ")).To(Equal("/projects/77/issues?page=1 /projects/77/issues?page=2 /projects/77/merge_requests?page=1"))
		Expect(counter(metrics, "sync_items_total", "gitlab")).To(BeEquivalentTo(153))
	})

	It("tears down only the uninstalled connection's projects", func(ctx SpecContext) {
		subscribeProject(ctx, acme, conn, 77)
		subscribeProject(ctx, acme, other, 88)
		drain(ctx, func() bool { return job(ctx, conn, 77).State == "DONE" && job(ctx, other, 88).State == "DONE" })
		Expect(gitlabOf(ctx, 77)).To(Equal(153))

		setState(ctx, conn, "UNINSTALLED")
		drain(ctx, func() bool {
			return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, conn) == 1
		})
		Expect(gitlabOf(ctx, 77)).To(BeZero())
		Expect(gitlabOf(ctx, 88)).To(Equal(11))

		setState(ctx, conn, "ACTIVE")
		drain(ctx, func() bool { return job(ctx, conn, 77).State == "DONE" })
		Expect(gitlabOf(ctx, 77)).To(Equal(153))
	})
})
