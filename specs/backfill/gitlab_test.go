package backfill_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabsync"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// fakeGitLab serves projects' issues and merge requests, and groups' projects, the way GitLab
// does: offset pages (page, per_page) with X-Next-Page, or, when keyset is on and the request
// asks pagination=keyset, keyset pages in id order (id_after) with a Link rel="next" and no
// X-Next-Page. refuse answers 405 to a keyset request instead, as GitLab does where keyset
// pages are not available; nextHost makes the rel="next" links name another host. A group's
// projects are its own and, with include_subgroups=true, its subgroups' (a project's namespace
// lists its ancestors in "within"). It checks the PRIVATE-TOKEN of every request and can hold
// one request until released.
type fakeGitLab struct {
	server   *httptest.Server
	mu       sync.Mutex
	lists    map[string][]obj // "/projects/77/issues"
	per      map[string]int   // a smaller page size for a list
	keyset   bool
	refuse   bool
	nextHost string
	seen     []string
	queries  []url.Values
	badTok   int
	// readers, when set for a token, names the only paths (prefixes) that token may read:
	// another tenant's token gets 404 elsewhere, as GitLab answers for a project it cannot
	// see. A token without an entry other than gitlabToken is refused (401).
	readers map[string][]string
	reads   []string // "path token" of every request
	holdAt  string
	held    chan struct{}
	release chan struct{}
}

const gitlabToken = "glpat-spec"

func newFakeGitLab() *fakeGitLab {
	f := &fakeGitLab{lists: map[string][]obj{}, per: map[string]int{}}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	DeferCleanup(f.server.Close)
	return f
}

func (f *fakeGitLab) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	locked := true
	defer func() {
		if locked {
			f.mu.Unlock()
		}
	}()
	q := r.URL.Query()
	keyset := q.Get("pagination") == "keyset"
	tok := r.Header.Get("PRIVATE-TOKEN")
	f.reads = append(f.reads, r.URL.Path+" "+tok)
	if allowed, known := f.readers[tok]; known {
		if !slices.ContainsFunc(allowed, func(prefix string) bool { return strings.HasPrefix(r.URL.Path, prefix) }) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"404 Project Not Found"}`))
			return
		}
	} else if tok != gitlabToken {
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
	if group, found := strings.CutPrefix(r.URL.Path, "/groups/"); found && q.Get("include_subgroups") != "true" {
		id, _ := strconv.ParseInt(strings.TrimSuffix(group, "/projects"), 10, 64)
		list = slices.DeleteFunc(slices.Clone(list), func(p obj) bool { return p["namespace"].(obj)["id"] != id })
	}
	per, _ := strconv.Atoi(q.Get("per_page"))
	if p := f.per[r.URL.Path]; p > 0 {
		per = min(per, p)
	}
	var out []obj
	var at string
	switch {
	case keyset && f.refuse:
		f.seen = append(f.seen, r.URL.Path+"?refused")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"error":"Keyset pagination is not yet available for this type of request"}`))
		return
	case keyset && f.keyset:
		after, _ := strconv.ParseInt(q.Get("id_after"), 10, 64)
		at = r.URL.Path + "?id_after=" + strconv.FormatInt(after, 10)
		for _, o := range list {
			if o["id"].(int64) > after {
				out = append(out, o)
			}
		}
		if len(out) > per {
			out = out[:per]
			next := url.Values{}
			for k, v := range q {
				next[k] = v
			}
			next.Set("id_after", strconv.FormatInt(out[len(out)-1]["id"].(int64), 10))
			host := strings.TrimPrefix(f.server.URL, "http://")
			if f.nextHost != "" {
				host = f.nextHost
			}
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next", <http://%s%s?per_page=%d>; rel="first"`,
				host, r.URL.Path, next.Encode(), host, r.URL.Path, per))
		}
	default:
		page, err := strconv.Atoi(q.Get("page"))
		if err != nil || page < 1 {
			page = 1
		}
		at = r.URL.Path + "?page=" + strconv.Itoa(page)
		from := min((page-1)*per, len(list))
		to := min(from+per, len(list))
		if to < len(list) {
			w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
		} else {
			w.Header().Set("X-Next-Page", "")
		}
		out = list[from:to]
	}
	f.seen = append(f.seen, at)
	f.queries = append(f.queries, q)
	if at == f.holdAt && f.held != nil {
		f.holdAt = ""
		close(f.held)
		f.mu.Unlock()
		locked = false
		<-f.release
	}
	if out == nil {
		out = []obj{}
	}
	writeJSON(w, out)
}

// holdFirst holds the first request answered as at ("/projects/77/issues?id_after=0") until
// release is closed; held is closed when it arrives.
func (f *fakeGitLab) holdFirst(at string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdAt, f.held, f.release = at, make(chan struct{}), make(chan struct{})
}

func (f *fakeGitLab) requests() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.seen, " ")
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

// groupProject adds project id, in the namespace group ns, to the projects of each group of
// within (ns and its ancestors), in id order, as GET /groups/{id}/projects lists it.
func (f *fakeGitLab) groupProject(id, ns int64, path string, within ...int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := obj{"id": id, "name": path[strings.LastIndex(path, "/")+1:], "path_with_namespace": path,
		"web_url": "https://gitlab.example/" + path, "default_branch": "main", "visibility": "private",
		"namespace": obj{"id": ns, "kind": "group", "full_path": path[:strings.LastIndex(path, "/")]}}
	for _, g := range within {
		key := fmt.Sprintf("/groups/%d/projects", g)
		f.lists[key] = append(f.lists[key], p)
		slices.SortFunc(f.lists[key], func(a, b obj) int { return cmp.Compare(a["id"].(int64), b["id"].(int64)) })
	}
}

// gitlabConnection inserts an ACTIVE GITLAB connection of ws whose API token is the fake's.
// recorded is "path token" of every request so far.
func (f *fakeGitLab) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reads)
}

func gitlabConnection(ctx context.Context, ws int64) int64 {
	GinkgoHelper()
	return gitlabConnectionWithToken(ctx, ws, gitlabToken)
}

// gitlabConnectionWithToken is gitlabConnection with its own API token (sealed for it, as
// PUT …/api-token stores it).
func gitlabConnectionWithToken(ctx context.Context, ws int64, token string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config)
		VALUES ($1, 'GITLAB', 'GITLAB', 'ACTIVE', 'https://gitlab.example', '{"groupId":42}') RETURNING id`, ws).Scan(&id)).To(Succeed())
	sealed, err := box.Seal(id, []byte(token))
	Expect(err).NotTo(HaveOccurred())
	_, err = pool.Exec(ctx, `UPDATE connection SET api_token_ciphertext = $2 WHERE id = $1`, id, sealed)
	Expect(err).NotTo(HaveOccurred())
	return id
}

func subscribeProject(ctx context.Context, ws, conn, project int64) {
	GinkgoHelper()
	subscribeGitLab(ctx, ws, conn, "project", strconv.FormatInt(project, 10))
}

func subscribeGitLab(ctx context.Context, ws, conn int64, resourceType, id string) {
	GinkgoHelper()
	subscribeResource(ctx, ws, conn, "GITLAB", resourceType, id, "")
}

// gitlabRunner is one server's runner of the GitLab source against the fake, on p and store.
func gitlabRunner(owner string, p *pgxpool.Pool, store *syncjobs.Store, gl *fakeGitLab) (*backfill.Runner, *telemetry.Metrics) {
	GinkgoHelper()
	mirror, err := gitlabmirror.New(p)
	Expect(err).NotTo(HaveOccurred())
	feed, err := changefeed.New(p, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(mirror.PublishChanges(feed, gitlabread.Views{})).To(Succeed())
	live, err := managementstore.NewLiveSecrets(p, box)
	Expect(err).NotTo(HaveOccurred())
	// The server's own credential choice: the job's connection's API token, nothing else.
	creds := &gitlabapi.Credentials{Store: live}
	client, err := gitlabapi.New(gitlabapi.Config{BaseURL: gl.server.URL, MaxBodyBytes: 8 << 20, Token: creds.Token})
	Expect(err).NotTo(HaveOccurred())
	src, err := gitlabsync.New(client, mirror)
	Expect(err).NotTo(HaveOccurred())
	metrics := declaredMetrics("github", "gitlab")
	r := newRunner(owner, store, metrics, src)
	return r, metrics
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
		r, metrics = gitlabRunner("server-a", pool, jobs, gl)
		gitlabOf = func(ctx context.Context, project int64) int {
			GinkgoHelper()
			return count(ctx, `SELECT (SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = $2)
				+ (SELECT count(*) FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = $2)`, acme, project)
		}
	})

	drain := func(ctx context.Context, cond func() bool) {
		GinkgoHelper()
		drainRunner(ctx, r, cond)
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
		// This server ignores pagination=keyset and answers offset pages.
		Expect(gl.requests()).To(Equal("/projects/77/issues?page=1 /projects/77/issues?page=2 /projects/77/merge_requests?page=1"))
		Expect(gl.queries[0].Get("pagination")).To(Equal("keyset"))
		Expect(gl.queries[1].Get("pagination")).To(BeEmpty())
		Expect(counter(metrics, "sync_items_total", "gitlab")).To(BeEquivalentTo(153))
	})

	Describe("with two tenants, each reading with its own connection's API token", func() {
		It("reads a subscribed project only with the subscribing connection's token, and mirrors nothing of a project that token cannot read", func(ctx SpecContext) {
			globex := support.NewWorkspace(ctx, manage, "globex").ID
			mallory := gitlabConnectionWithToken(ctx, globex, "glpat-mallory")
			gl.readers = map[string][]string{"glpat-mallory": {"/projects/88/"}}
			// globex subscribes to its own project 88 and, as if a check had let it, to acme's
			// project 77: the backfill reads 77 with globex's token only, which GitLab refuses.
			subscribeProject(ctx, globex, mallory, 88)
			subscribeProject(ctx, globex, mallory, 77)
			subscribeProject(ctx, acme, conn, 77)
			drain(ctx, func() bool {
				return job(ctx, mallory, 88).State == "DONE" && job(ctx, conn, 77).State == "DONE" &&
					job(ctx, mallory, 77).Attempt >= 1
			})
			for _, read := range gl.recorded() {
				path, token, _ := strings.Cut(read, " ")
				switch {
				case strings.HasPrefix(path, "/projects/88/"):
					Expect(token).To(Equal("glpat-mallory"), read)
				case strings.HasPrefix(path, "/projects/77/"):
					Expect(token).To(BeElementOf("glpat-mallory", gitlabToken), read)
				}
			}
			Expect(gl.recorded()).To(ContainElement("/projects/77/issues glpat-mallory"), "globex's job read 77 with globex's own token")
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 77`, globex)).To(BeZero())
			Expect(count(ctx, `SELECT count(*) FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = 77`, globex)).To(BeZero())
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 88`, globex)).To(Equal(10))
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 77`, acme)).To(Equal(150))
			Expect(job(ctx, mallory, 77).LastError).To(HaveValue(Equal("provider-refused")))
		})

		It("gives a handler's read (merge request approvals) only the token of the workspace's connection that verified the project or its group", func(ctx SpecContext) {
			globex := support.NewWorkspace(ctx, manage, "globex").ID
			mallory := gitlabConnectionWithToken(ctx, globex, "glpat-mallory")
			subscribeProject(ctx, globex, mallory, 88)
			subscribeProject(ctx, acme, conn, 77)
			subscribeGitLab(ctx, globex, mallory, "group", "40")
			_, err := pool.Exec(ctx, `UPDATE connection_subscription SET access = 'REVOKED', access_reason = 'group-not-found'
				WHERE connection_id = $1 AND resource_type = 'group'`, mallory)
			Expect(err).NotTo(HaveOccurred())
			live, err := managementstore.NewLiveSecrets(pool, box)
			Expect(err).NotTo(HaveOccurred())
			creds := &gitlabapi.Credentials{Store: live}
			client, err := gitlabapi.New(gitlabapi.Config{BaseURL: gl.server.URL, Token: creds.Token})
			Expect(err).NotTo(HaveOccurred())

			// acme verified project 77: its token reads (the fake has no approvals, so 404).
			_, err = client.MergeRequestApprovals(ctx, gitlabmodel.Access{WorkspaceID: acme, ProjectID: 77}, 77, 1)
			Expect(err).To(MatchError(gitlabmodel.ErrProviderNotFound))
			// globex names acme's project, directly or through a group it holds only REVOKED:
			// no credential, no request.
			for _, acc := range []gitlabmodel.Access{
				{WorkspaceID: globex, ProjectID: 77},
				{WorkspaceID: globex, ProjectID: 77, GroupIDs: []int64{40}},
			} {
				_, err = client.MergeRequestApprovals(ctx, acc, 77, 1)
				Expect(err).To(MatchError(gitlabapi.ErrNoCredential), "%+v", acc)
				Expect(err).To(MatchError(gitlabmodel.ErrProviderNotFound), "the handler then decides from the payload")
			}
			Expect(gl.recorded()).To(Equal([]string{"/projects/77/merge_requests/1/approvals " + gitlabToken}))
		})

		It("refuses a backfill of a connection without an API token, and sends no token at all", func(ctx SpecContext) {
			_, err := pool.Exec(ctx, `UPDATE connection SET api_token_ciphertext = NULL WHERE id = $1`, conn)
			Expect(err).NotTo(HaveOccurred())
			subscribeProject(ctx, acme, conn, 77)
			drain(ctx, func() bool { return job(ctx, conn, 77).Attempt >= 1 })
			Expect(job(ctx, conn, 77).LastError).To(HaveValue(Equal("provider-refused")))
			Expect(gl.recorded()).To(BeEmpty())
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1`, acme)).To(BeZero())
		})
	})

	It("reads offset pages where GitLab refuses keyset pages with 405", func(ctx SpecContext) {
		gl.refuse = true
		subscribeProject(ctx, acme, conn, 77)
		drain(ctx, func() bool { return job(ctx, conn, 77).State == "DONE" })
		j := job(ctx, conn, 77)
		Expect(j.Items).To(BeEquivalentTo(153))
		Expect(j.Pages).To(BeEquivalentTo(3))
		Expect(j.Attempt).To(BeNumerically("<=", 1))
		Expect(gl.requests()).To(Equal("/projects/77/issues?refused /projects/77/issues?page=1 /projects/77/issues?page=2 " +
			"/projects/77/merge_requests?refused /projects/77/merge_requests?page=1"))
	})

	It("continues a job stored with an offset cursor before keyset pages", func(ctx SpecContext) {
		gl.keyset = true
		subscribeProject(ctx, acme, conn, 77)
		_, err := pool.Exec(ctx, `UPDATE sync_job SET cursor = 'issues:2', pages = 1, items = 100 WHERE connection_id = $1`, conn)
		Expect(err).NotTo(HaveOccurred())
		drain(ctx, func() bool { return job(ctx, conn, 77).State == "DONE" })
		j := job(ctx, conn, 77)
		Expect(j.Items).To(BeEquivalentTo(153))
		Expect(j.Pages).To(BeEquivalentTo(3))
		Expect(gl.requests()).To(Equal("/projects/77/issues?page=2 /projects/77/merge_requests?id_after=0"))
		Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1`, acme)).To(Equal(50)) // page 2 only
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
		Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND data->>'projectId' = '77'`, acme)).
			To(BeZero(), "the torn-down project's changes lost their data")
		Expect(count(ctx, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1 AND data->>'projectId' = '88'`, acme)).
			To(Equal(11), "the other connection's project keeps its changes")
		Expect(support.Column(ctx, pool, `SELECT (data - 'version')::text FROM workspace_change WHERE workspace_id = $1 AND type = 'connection.torn_down' AND data ? 'version'`, acme)).
			To(ConsistOf(MatchJSON(fmt.Sprintf(`{"connectionId":%d,"provider":"GITLAB","resources":[{"type":"project","id":"77"}],"everything":false,"removedChanges":153}`, conn))))

		setState(ctx, conn, "ACTIVE")
		drain(ctx, func() bool { return job(ctx, conn, 77).State == "DONE" })
		Expect(gitlabOf(ctx, 77)).To(Equal(153))
	})

	Describe("keyset pages", func() {
		BeforeEach(func() {
			gl.keyset = true
			gl.project(66, 250, 120)
		})

		It("follows keyset Link pages to the end", func(ctx SpecContext) {
			subscribeProject(ctx, acme, conn, 66)
			drain(ctx, func() bool { return job(ctx, conn, 66).State == "DONE" })
			j := job(ctx, conn, 66)
			Expect(j.Items).To(BeEquivalentTo(370))
			Expect(j.Pages).To(BeEquivalentTo(5)) // issues 3, merge requests 2
			Expect(j.Cursor).To(HaveValue(Equal("merge_requests:done")))
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 66`, acme)).To(Equal(250))
			Expect(count(ctx, `SELECT count(DISTINCT iid) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 66`, acme)).To(Equal(250))
			Expect(count(ctx, `SELECT count(*) FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = 66`, acme)).To(Equal(120))
			Expect(gl.requests()).To(Equal("/projects/66/issues?id_after=0 /projects/66/issues?id_after=660100 " +
				"/projects/66/issues?id_after=660200 /projects/66/merge_requests?id_after=0 /projects/66/merge_requests?id_after=1320100"))
			for _, q := range gl.queries {
				Expect(q.Get("pagination")).To(Equal("keyset"))
				Expect(q.Get("per_page")).To(Equal("100"))
				Expect(q.Get("sort")).To(Equal("asc"))
			}
			Expect(gl.badTok).To(BeZero())
			Expect(counter(metrics, "sync_pages_total", "gitlab")).To(BeEquivalentTo(5))
			Expect(counter(metrics, "sync_items_total", "gitlab")).To(BeEquivalentTo(370))
		})

		It("resumes a keyset page from its committed cursor when another server takes the lease over", func(ctx SpecContext) {
			clockB := support.NewClock()
			jobsLate, err := syncjobs.New(poolB, syncjobs.Config{Clock: clockB})
			Expect(err).NotTo(HaveOccurred())
			b, metricsB := gitlabRunner("server-b", poolB, jobsLate, gl)
			subscribeProject(ctx, acme, conn, 66)
			gl.holdFirst("/projects/66/issues?id_after=660200")

			done := runUntilHeld(ctx, gl.held, r.RunOne)
			cursor := job(ctx, conn, 66).Cursor
			Expect(cursor).NotTo(BeNil())
			Expect(*cursor).To(HavePrefix("issues?"))
			Expect(*cursor).To(ContainSubstring("id_after=660200"))
			Expect(*cursor).NotTo(ContainSubstring(gitlabToken))

			// Server A stalls inside its page read; on B's clock its lease runs out, and B
			// continues from the committed keyset cursor.
			clockB.Advance(specLeaseTime + time.Second)
			Expect(b.Drain(ctx)).To(Succeed())
			Expect(job(ctx, conn, 66).State).To(Equal("DONE"))
			close(gl.release)
			Eventually(done).WithContext(ctx).Should(BeClosed())

			j := job(ctx, conn, 66)
			Expect(j.State).To(Equal("DONE"))
			Expect(j.Items).To(BeEquivalentTo(370))
			Expect(j.Pages).To(BeEquivalentTo(5))
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 66`, acme)).To(Equal(250))
			Expect(gl.requests()).To(Equal("/projects/66/issues?id_after=0 /projects/66/issues?id_after=660100 " +
				"/projects/66/issues?id_after=660200 /projects/66/issues?id_after=660200 " +
				"/projects/66/merge_requests?id_after=0 /projects/66/merge_requests?id_after=1320100"))
			Expect(counter(metrics, "sync_pages_total", "gitlab")).To(BeEquivalentTo(2))
			Expect(counter(metricsB, "sync_pages_total", "gitlab")).To(BeEquivalentTo(3))
		})

		It("does not follow a next link to another host", func(ctx SpecContext) {
			var foreign atomic.Int32
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				foreign.Add(1)
				writeJSON(w, []obj{})
			}))
			DeferCleanup(elsewhere.Close)
			gl.nextHost = strings.TrimPrefix(elsewhere.URL, "http://")
			subscribeProject(ctx, acme, conn, 66)
			drain(ctx, func() bool { return job(ctx, conn, 66).State == "FAILED" })
			j := job(ctx, conn, 66)
			Expect(j.LastError).To(HaveValue(Equal("provider-unreadable")))
			Expect(j.Items).To(BeZero())
			Expect(j.Pages).To(BeZero())
			Expect(j.Cursor).To(BeNil())
			Expect(foreign.Load()).To(BeZero())
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1`, acme)).To(BeZero())
			// Every attempt asked the first page again, on the API host.
			Expect(gl.requests()).To(Equal("/projects/66/issues?id_after=0 /projects/66/issues?id_after=0 /projects/66/issues?id_after=0"))
		})
	})

	Describe("a group subscription", func() {
		// Group 42 holds project 701; its subgroup 43 holds 702 and 704; 43's subgroup 44
		// holds 703. Group 50, not subscribed, holds 705.
		BeforeEach(func() {
			gl.keyset = true
			gl.groupProject(701, 42, "acme/app", 42)
			gl.groupProject(702, 43, "acme/tools/cli", 43, 42)
			gl.groupProject(703, 44, "acme/tools/deep/lib", 44, 43, 42)
			gl.groupProject(704, 43, "acme/tools/web", 43, 42)
			gl.groupProject(705, 50, "other/x", 50)
			gl.per["/groups/42/projects"] = 3 // two projects pages
			gl.project(701, 120, 2)
			gl.project(702, 5, 0)
			gl.project(703, 0, 3)
			gl.project(704, 1, 1)
			gl.project(705, 9, 9)
		})

		It("backfills every project of a subscribed group, subgroups included", func(ctx SpecContext) {
			subscribeGitLab(ctx, acme, conn, "group", "42")
			drain(ctx, func() bool { return job(ctx, conn, 42).State == "DONE" })
			j := job(ctx, conn, 42)
			Expect(j.Cursor).To(HaveValue(Equal("group:done")))
			Expect(gitlabOf(ctx, 701)).To(Equal(122))
			Expect(gitlabOf(ctx, 702)).To(Equal(5))
			Expect(gitlabOf(ctx, 703)).To(Equal(3))
			Expect(gitlabOf(ctx, 704)).To(Equal(2))
			Expect(gitlabOf(ctx, 705)).To(BeZero())
			Expect(support.Column(ctx, pool, `SELECT id || ' ' || namespace_id || ' ' || path_with_namespace || ' ' || visibility
				FROM gitlab_project WHERE workspace_id = $1 ORDER BY id`, acme)).To(Equal([]string{
				"701 42 acme/app private", "702 43 acme/tools/cli private", "703 44 acme/tools/deep/lib private",
				"704 43 acme/tools/web private"}))
			// Items: each project's row, issues and merge requests.
			Expect(j.Items).To(BeEquivalentTo(4 + 122 + 5 + 3 + 2))
			// Pages: 701 issues 2 and merge requests 1; 702 issues 1 and merge requests 1;
			// 703 and 704 likewise.
			Expect(j.Pages).To(BeEquivalentTo(3 + 2 + 2 + 2))
			Expect(gl.badTok).To(BeZero())
			for _, q := range gl.queries {
				if q.Has("include_subgroups") {
					Expect(q.Get("include_subgroups")).To(Equal("true"))
					Expect(q.Get("with_shared")).To(Equal("false"))
					Expect(q.Get("order_by")).To(Equal("id"))
				}
			}
			Expect(gl.requests()).To(ContainSubstring("/groups/42/projects?id_after=703"))
		})

		It("tears a subscribed group's subgroup projects down with the connection", func(ctx SpecContext) {
			subscribeGitLab(ctx, acme, conn, "group", "42")
			subscribeProject(ctx, acme, other, 705)
			drain(ctx, func() bool { return job(ctx, conn, 42).State == "DONE" && job(ctx, other, 705).State == "DONE" })
			Expect(gitlabOf(ctx, 703)).To(Equal(3))

			setState(ctx, conn, "UNINSTALLED")
			drain(ctx, func() bool {
				return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, conn) == 1
			})
			for _, p := range []int64{701, 702, 703, 704} {
				Expect(gitlabOf(ctx, p)).To(BeZero(), "project %d", p)
			}
			Expect(count(ctx, `SELECT count(*) FROM gitlab_project WHERE workspace_id = $1`, acme)).To(BeZero())
			Expect(count(ctx, `SELECT count(*) FROM gitlab_group_project WHERE workspace_id = $1`, acme)).To(BeZero())
			Expect(gitlabOf(ctx, 705)).To(Equal(18))
		})

		It("keeps a subgroup project that another live connection's group subscription covers", func(ctx SpecContext) {
			subscribeGitLab(ctx, acme, conn, "group", "42")
			subscribeGitLab(ctx, acme, other, "group", "43")
			drain(ctx, func() bool { return job(ctx, conn, 42).State == "DONE" && job(ctx, other, 43).State == "DONE" })

			setState(ctx, conn, "UNINSTALLED")
			drain(ctx, func() bool {
				return count(ctx, `SELECT count(*) FROM sync_job WHERE connection_id = $1 AND kind = 'TEARDOWN' AND state = 'DONE'`, conn) == 1
			})
			// 703's namespace is 44, under 43: only the walk of group 43 tells that it is covered.
			Expect(gitlabOf(ctx, 703)).To(Equal(3))
			Expect(gitlabOf(ctx, 702)).To(Equal(5))
			Expect(gitlabOf(ctx, 704)).To(Equal(2))
			Expect(gitlabOf(ctx, 701)).To(BeZero())
			Expect(support.Column(ctx, pool, `SELECT id::text FROM gitlab_project WHERE workspace_id = $1 ORDER BY id`, acme)).
				To(Equal([]string{"702", "703", "704"}))
		})

		It("refuses a group id that is not a positive integer", func(ctx SpecContext) {
			subscribeGitLab(ctx, acme, conn, "group", "acme")
			var state string
			var lastError *string
			drain(ctx, func() bool {
				Expect(pool.QueryRow(ctx, `SELECT state, last_error FROM sync_job WHERE connection_id = $1 AND resource_type = 'group'`, conn).
					Scan(&state, &lastError)).To(Succeed())
				return state == "FAILED"
			})
			Expect(lastError).To(HaveValue(Equal("provider-refused")))
			Expect(gl.requests()).To(BeEmpty())
		})

		It("lets a newer webhook racing an older page win for a group-walked project", func(ctx SpecContext) {
			subscribeGitLab(ctx, acme, conn, "group", "42")
			gl.holdFirst("/projects/702/issues?id_after=0")
			done := runUntilHeld(ctx, gl.held, r.RunOne)

			// While the page (issue 1 as of 2024-02-02, the project as the group lists it) is on
			// its way, an issue webhook with a newer timestamp commits, discovering the project
			// under its new name.
			box, err := deliveryinbox.New(pool)
			Expect(err).NotTo(HaveOccurred())
			store, err := gitlabmirror.New(pool)
			Expect(err).NotTo(HaveOccurred())
			reg := consumer.NewRegistry()
			Expect(gitlabhandlers.Register(reg, gitlabhandlers.Deps{Inbox: box, Store: store})).To(Succeed())
			payload := `{"object_kind":"issue","project":{"id":702,"name":"cli2","namespace_id":43,
				"path_with_namespace":"acme/tools/cli2","web_url":"https://gitlab.example/acme/tools/cli2","default_branch":"main"},
				"object_attributes":{"id":7020001,"iid":1,"project_id":702,"title":"Renamed by a webhook","state":"opened",
				"author_id":5,"url":"https://gitlab.example/i","action":"update",
				"created_at":"2024-02-01 00:00:00 UTC","updated_at":"2024-05-05 00:00:00 UTC"},"labels":[]}`
			d := support.LeasedEvent(ctx, pool, acme, gitlab.Provider, "Issue Hook", "gitlab:project:702", payload)
			Expect(d.Handle(ctx, reg)).To(Succeed())

			close(gl.release)
			Eventually(done).WithContext(ctx).Should(BeClosed())
			drain(ctx, func() bool { return job(ctx, conn, 42).State == "DONE" })

			Expect(support.Scalar[string](ctx, pool, `SELECT title FROM gitlab_issue WHERE workspace_id = $1 AND id = 7020001`, acme)).
				To(Equal("Renamed by a webhook"))
			Expect(support.Scalar[string](ctx, pool, `SELECT title FROM gitlab_issue WHERE workspace_id = $1 AND id = 7020002`, acme)).
				To(Equal("Issue 2"))
			Expect(support.Scalar[string](ctx, pool, `SELECT path_with_namespace FROM gitlab_project WHERE workspace_id = $1 AND id = 702`, acme)).
				To(Equal("acme/tools/cli2"))
			Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1 AND project_id = 702`, acme)).To(Equal(5))
		})
	})
})
