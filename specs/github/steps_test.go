package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

// failingCommits is the real mirror store except that the first failures writes of one commit
// fail, the way a database error part way through a push would. It counts every commit write,
// also of the commits written together (UpsertCommits).
type failingCommits struct {
	githubmodel.Store
	failSHA  string
	failures int
	mu       sync.Mutex
	writes   map[string]int
}

// wrote counts the writes of cs and reports whether one of them fails.
func (f *failingCommits) wrote(cs ...githubmodel.Commit) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := false
	for _, c := range cs {
		f.writes[c.SHA]++
		if c.SHA == f.failSHA && f.failures > 0 {
			f.failures--
			fail = true
		}
	}
	return fail
}

func (f *failingCommits) UpsertCommit(ctx context.Context, tx ports.Tx, ws int64, c githubmodel.Commit) error {
	if f.wrote(c) {
		return errors.New("commit write refused")
	}
	return f.Store.UpsertCommit(ctx, tx, ws, c)
}

func (f *failingCommits) UpsertCommits(ctx context.Context, tx ports.Tx, ws int64, cs []githubmodel.Commit) error {
	if f.wrote(cs...) {
		return errors.New("commit write refused")
	}
	return f.Store.UpsertCommits(ctx, tx, ws, cs)
}

// counts copies the writes counted so far.
func (f *failingCommits) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.writes {
		out[k] = v
	}
	return out
}

// leaseTakenMidPush is the real mirror store whose commit writes, once written, run take (a
// lease taken back while the push writes its commits). It counts every commit write.
type leaseTakenMidPush struct {
	githubmodel.Store
	take   func(ctx context.Context)
	writes atomic.Int64
}

func (l *leaseTakenMidPush) UpsertCommit(ctx context.Context, tx ports.Tx, ws int64, c githubmodel.Commit) error {
	return l.UpsertCommits(ctx, tx, ws, []githubmodel.Commit{c})
}

func (l *leaseTakenMidPush) UpsertCommits(ctx context.Context, tx ports.Tx, ws int64, cs []githubmodel.Commit) error {
	l.writes.Add(int64(len(cs)))
	if err := l.Store.UpsertCommits(ctx, tx, ws, cs); err != nil {
		return err
	}
	l.take(ctx)
	return nil
}

var _ = Describe("Push steps", func() {
	threeCommits := func() []byte {
		return body(obj{
			"ref": "refs/heads/main", "before": sha(40), "after": sha(43), "deleted": false,
			"commits":    []any{pushCommit(sha(41), "one"), pushCommit(sha(42), "two"), pushCommit(sha(43), "three")},
			"repository": repository(4242, "acme/app", 77),
		})
	}

	It("writes a push's commits and their steps in one transaction", func(ctx SpecContext) {
		ws := newWorkspace(ctx, "acme")
		d := leased(ctx, ws, "push", threeCommits())
		Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())
		Expect(scalar[int](ctx, `SELECT count(DISTINCT xmin::text)::int FROM github_commit WHERE workspace_id = $1`, ws)).To(Equal(1))
		Expect(scalar[int](ctx, `SELECT count(*)::int FROM provider_event_step
			WHERE event_id = $1 AND step_name LIKE 'push.commit/4242/%'
			  AND xmin = (SELECT xmin FROM github_commit WHERE workspace_id = $2 LIMIT 1)`, d.ID, ws)).
			To(Equal(3), "each commit's step commits with the commits")
	})

	When("the lease is taken back while the push writes its commits", func() {
		It("writes none of them, tries none on its own, and returns the rejection", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			d := leased(ctx, ws, "push", threeCommits())
			taking := &leaseTakenMidPush{Store: store, take: func(ctx context.Context) { d.retry(ctx) }}
			err := d.handle(ctx, registry(githubhandlers.Deps{Store: taking}))
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
			Expect(d.steps(ctx)).To(Equal([]string{"push.persist"}))
			Expect(scalar[int](ctx, `SELECT count(*)::int FROM github_commit WHERE workspace_id = $1`, ws)).To(BeZero())
			Expect(taking.writes.Load()).To(BeEquivalentTo(3), "no commit is tried again in its own step")
		})
	})

	When("a push fails after two of its commit steps committed", func() {
		It("resumes on retry with the third commit and does not write the first two again", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			// The third commit fails in the commits' shared transaction and again in its own step.
			failing := &failingCommits{Store: store, failSHA: sha(13), failures: 2, writes: map[string]int{}}
			reg := registry(githubhandlers.Deps{Store: failing})
			d := leased(ctx, ws, "push", body(obj{
				"ref": "refs/heads/main", "before": sha(10), "after": sha(13), "deleted": false,
				"commits":    []any{pushCommit(sha(11), "one"), pushCommit(sha(12), "two"), pushCommit(sha(13), "three")},
				"repository": repository(4242, "acme/app", 77),
			}))

			Expect(d.handle(ctx, reg)).To(MatchError(ContainSubstring("commit write refused")))
			Expect(d.steps(ctx)).To(Equal([]string{
				"push.commit/4242/" + sha(11), "push.commit/4242/" + sha(12), "push.persist",
			}))
			first := xmin(ctx, "github_commit", "workspace_id = $1 AND sha = $2", ws, sha(11))
			second := xmin(ctx, "github_commit", "workspace_id = $1 AND sha = $2", ws, sha(12))
			ref := xmin(ctx, "github_ref", "workspace_id = $1 AND ref = 'refs/heads/main'", ws)
			// Each commit was written in the shared transaction that rolled back, then the first
			// two in their own steps, up to the third that failed again.
			Expect(failing.counts()).To(Equal(map[string]int{sha(11): 2, sha(12): 2, sha(13): 2}))

			d.retry(ctx)
			Expect(d.handle(ctx, reg)).To(Succeed())

			Expect(failing.counts()).To(Equal(map[string]int{sha(11): 2, sha(12): 2, sha(13): 3}))
			Expect(xmin(ctx, "github_commit", "workspace_id = $1 AND sha = $2", ws, sha(11))).To(Equal(first))
			Expect(xmin(ctx, "github_commit", "workspace_id = $1 AND sha = $2", ws, sha(12))).To(Equal(second))
			Expect(xmin(ctx, "github_ref", "workspace_id = $1 AND ref = 'refs/heads/main'", ws)).To(Equal(ref))
			Expect(scalar[string](ctx, `SELECT message FROM github_commit WHERE workspace_id = $1 AND sha = $2`, ws, sha(13))).
				To(Equal("three"))
			Expect(d.steps(ctx)).To(ContainElement("push.commit/4242/" + sha(13)))
		})
	})

	When("the payload says the push had more commits than it lists", func() {
		It("reads the missing commits from GitHub and writes each in its own step", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			gh := newFakeGitHub()
			gh.compare = fmt.Sprintf(`{"commits":[
				{"sha":%q,"html_url":"u","commit":{"message":"listed","author":{"name":"M","email":"m@x","date":"2024-04-01T00:00:00Z"},"committer":{"name":"M","email":"m@x","date":"2024-04-01T00:00:00Z"}}},
				{"sha":%q,"html_url":"u","commit":{"message":"left out","author":{"name":"M","email":"m@x","date":"2024-04-02T00:00:00Z"},"committer":{"name":"M","email":"m@x","date":"2024-04-02T00:00:00Z"}},"author":{"login":"mona"}}]}`,
				sha(21), sha(22))
			reg := registry(githubhandlers.Deps{Reader: gh.client()})
			d := leased(ctx, ws, "push", body(obj{
				"ref": "refs/heads/main", "before": sha(20), "after": sha(22), "size": 2,
				"commits":    []any{pushCommit(sha(21), "listed")},
				"repository": repository(4242, "acme/app", 77),
			}))

			Expect(d.handle(ctx, reg)).To(Succeed())
			Expect(scalar[string](ctx, `SELECT message FROM github_commit WHERE workspace_id = $1 AND sha = $2`, ws, sha(22))).
				To(Equal("left out"))
			Expect(d.steps(ctx)).To(ContainElements("push.commit/4242/"+sha(21), "push.commit/4242/"+sha(22), "push.check_runs"))
			Expect(gh.paths()).To(ContainElement("/api/v3/repos/acme/app/compare/" + sha(20) + "..." + sha(22)))
		})
	})
})

var _ = Describe("Pull request orchestration", func() {
	When("a delivery is retried after its event write committed", func() {
		It("reconstructs the head from the mirror and finishes the check and refresh steps once", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			gh := newFakeGitHub()
			gh.failChecks.Store(1)
			reg := registry(githubhandlers.Deps{Reader: gh.client()})
			head := sha(31)
			d := leased(ctx, ws, "pull_request", body(obj{
				"action": "opened", "number": 5, "pull_request": pullRequest(9001, 5, head),
				"repository": repository(4242, "acme/app", 77),
			}))

			err := d.handle(ctx, reg)
			Expect(inbox.Classify(err)).To(Equal(inbox.Retryable), "a 502 from GitHub is a transient failure: %v", err)
			Expect(d.steps(ctx)).To(Equal([]string{"pull_request.upsert"}))
			written := xmin(ctx, "github_pull_request", "workspace_id = $1 AND id = 9001", ws)

			d.retry(ctx)
			Expect(d.handle(ctx, reg)).To(Succeed())
			Expect(d.steps(ctx)).To(Equal([]string{"pull_request.check_runs", "pull_request.refresh/9001", "pull_request.upsert"}))
			Expect(xmin(ctx, "github_pull_request", "workspace_id = $1 AND id = 9001", ws)).To(Equal(written),
				"the event write must not run again")
			Expect(scalar[string](ctx, `SELECT state FROM github_pull_request_checks WHERE workspace_id = $1 AND pull_request_id = 9001`, ws)).
				To(Equal("success"))
			refreshed := xmin(ctx, "github_pull_request_checks", "workspace_id = $1 AND pull_request_id = 9001", ws)
			reads := gh.checkReads.Load()
			Expect(reads).To(BeEquivalentTo(2))

			// A further redelivery of the same row finds every step committed.
			d.retry(ctx)
			Expect(d.handle(ctx, reg)).To(Succeed())
			Expect(xmin(ctx, "github_pull_request_checks", "workspace_id = $1 AND pull_request_id = 9001", ws)).To(Equal(refreshed))
			Expect(gh.checkReads.Load()).To(Equal(reads), "a committed check step reads GitHub no more")
			Expect(gh.tokens()).To(HaveEach("Bearer spec-token"))
		})
	})

	When("a status arrives for the head of an open pull request", func() {
		It("refreshes that pull request's check state in a step named by its id", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			reg := registry(githubhandlers.Deps{})
			head := sha(41)
			Expect(leased(ctx, ws, "pull_request", body(obj{
				"action": "opened", "pull_request": pullRequest(9002, 6, head), "repository": repository(4242, "acme/app", 77),
			})).handle(ctx, reg)).To(Succeed())

			d := leased(ctx, ws, "status", body(obj{
				"id": 777, "sha": head, "context": "ci", "state": "failure",
				"created_at": "2024-03-02T00:00:00Z", "updated_at": "2024-03-02T00:00:00Z",
				"repository": repository(4242, "acme/app", 77),
			}))
			Expect(d.handle(ctx, reg)).To(Succeed())
			Expect(d.steps(ctx)).To(Equal([]string{"pull_request.refresh/9002", "status.upsert"}))
			Expect(scalar[string](ctx, `SELECT state FROM github_pull_request_checks WHERE workspace_id = $1 AND pull_request_id = 9002`, ws)).
				To(Equal("failure"))
		})
	})
})

var _ = Describe("Payloads that cannot be mirrored", func() {
	DescribeTable("fail permanently and write nothing",
		func(ctx SpecContext, event string, payload string) {
			ws := newWorkspace(ctx, "acme")
			d := leased(ctx, ws, event, []byte(payload))
			err := d.handle(ctx, registry(githubhandlers.Deps{}))
			Expect(inbox.Classify(err)).To(Equal(inbox.Permanent), "%v", err)
			Expect(d.steps(ctx)).To(BeEmpty())
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_repository`)).To(BeZero())
		},
		Entry("an issue that is not an object", "issues", `{"action":"opened","issue":"x","repository":{"id":1,"name":"a","full_name":"o/a"}}`),
		Entry("an issue without a repository", "issues", `{"action":"opened","issue":{"id":1,"number":1,"title":"t"}}`),
		Entry("a push whose after is no SHA", "push", `{"ref":"refs/heads/main","before":"`+sha(1)+`","after":"nope","repository":{"id":1,"name":"a","full_name":"o/a"}}`),
		Entry("a timestamp GitHub never writes", "pull_request", `{"action":"opened","pull_request":{"id":1,"number":1,"updated_at":"yesterday"},"repository":{"id":1,"name":"a","full_name":"o/a"}}`),
	)
})

// fakeGitHub is GitHub's REST API on an httptest server under a GitHub Enterprise base path.
type fakeGitHub struct {
	srv        *httptest.Server
	failChecks atomic.Int64 // answer this many check-run reads with 502
	checkReads atomic.Int64
	compare    string
	mu         sync.Mutex
	seen       []string
	auth       []string
}

func newFakeGitHub() *fakeGitHub {
	f := &fakeGitHub{compare: `{"commits":[]}`}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.URL.Path)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/check-runs"):
			f.checkReads.Add(1)
			if f.failChecks.Add(-1) >= 0 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			// .../commits/{sha}/check-runs: the runs are of that commit.
			parts := strings.Split(r.URL.Path, "/")
			sha := parts[len(parts)-2]
			fmt.Fprintf(w, `{"total_count":1,"check_runs":[{"id":61,"head_sha":%q,"name":"build","status":"completed",
				"conclusion":"success","started_at":"2024-03-01T10:00:00Z","completed_at":"2024-03-01T10:05:00Z","check_suite":{"id":62}}]}`, sha)
		case strings.Contains(r.URL.Path, "/compare/"):
			fmt.Fprint(w, f.compare)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	DeferCleanup(f.srv.Close)
	return f
}

// client is the real REST adapter pointed at the fake, as at a GitHub Enterprise server.
func (f *fakeGitHub) client() *githubapi.Client {
	GinkgoHelper()
	c, err := githubapi.New(githubapi.Config{
		BaseURL: f.srv.URL + "/api/v3",
		Token: func(context.Context, githubmodel.Access) (credential.Credential, error) {
			return credential.SpecCredential(GinkgoT(), 1, 1, "spec-token"), nil
		},
	})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func (f *fakeGitHub) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *fakeGitHub) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}
