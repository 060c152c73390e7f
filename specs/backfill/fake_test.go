package backfill_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
)

type obj = map[string]any

// fakeGitHub serves repositories' history at the configured API root the way GitHub does:
// lists of 100 per page (per_page, page), a Link header with rel="next" while there are more,
// a bearer token it checks on every request. It can rate-limit one request, answer one page
// with something that is not GitHub's shape, and hold one request until released.
type fakeGitHub struct {
	server *httptest.Server
	token  string
	// installations mint installation tokens (POST /app/installations/{id}/access_tokens,
	// answered to any App JWT); a repository read accepts the token or any minted one.
	installations map[int64]string
	minted        map[string]bool

	mu       sync.Mutex
	repos    map[string]*fakeRepo // by full name
	byID     map[int64]string     // GET /repositories/{id} answers these
	orgs     map[string][]string  // GET /orgs/{login}/repos lists these repositories, in order
	requests []string             // "GET /repos/acme/app/issues?page=2" in arrival order
	queries  []string             // the raw query of every list request
	badAuth  int                  // requests with another token

	rateLimitOnce string // path?page=N answered 429 once
	broken        string // path?page=N answered with a page that does not parse, always
	// hold: the first request of this path?page=N waits for release after signalling held.
	hold    string
	held    chan struct{}
	release chan struct{}
}

type fakeRepo struct {
	repo       obj
	issues     []obj // the issues list as GitHub returns it (pull requests' issue sides included)
	pulls      []obj
	labels     []obj
	milestones []obj
}

func newFakeGitHub(token string) *fakeGitHub {
	f := &fakeGitHub{token: token, repos: map[string]*fakeRepo{}, installations: map[int64]string{}, minted: map[string]bool{}}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	DeferCleanup(f.server.Close)
	return f
}

func (f *fakeGitHub) URL() string { return f.server.URL }

func (f *fakeGitHub) add(r *fakeRepo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repos[r.repo["full_name"].(string)] = r
}

func (f *fakeGitHub) holdFirst(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold, f.held, f.release = key, make(chan struct{}), make(chan struct{})
}

func (f *fakeGitHub) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page == 0 {
		page = 1
	}
	key := r.URL.Path + "?page=" + strconv.Itoa(page)
	f.mu.Lock()
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/app/installations/") {
		f.requests = append(f.requests, "POST "+r.URL.Path)
		id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/app/installations/"), "/access_tokens"), 10, 64)
		tok, ok := f.installations[id]
		jwt, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && strings.Count(jwt, ".") == 2 {
			f.minted[tok] = true
		}
		f.mu.Unlock()
		if !ok || strings.Count(jwt, ".") != 2 {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"A JSON web token could not be decoded"}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, obj{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		return
	}
	f.requests = append(f.requests, "GET "+key)
	f.queries = append(f.queries, r.URL.Path+"?"+r.URL.RawQuery)
	auth, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if auth != f.token && !f.minted[auth] {
		f.badAuth++
		f.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"Bad credentials"}`))
		return
	}
	if key == f.rateLimitOnce {
		f.rateLimitOnce = ""
		f.mu.Unlock()
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"message":"secondary rate limit"}`))
		return
	}
	broken := key == f.broken
	var held, release chan struct{}
	if key == f.hold {
		f.hold, held, release = "", f.held, f.release
	}
	repos, byID, orgs := f.repos, f.byID, f.orgs
	f.mu.Unlock()
	if held != nil {
		close(held)
		select { // a spec that failed before releasing must not keep the server from closing
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	if broken {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"id": "not a number", "number": true}]`))
		return
	}

	if idText, ok := strings.CutPrefix(r.URL.Path, "/repositories/"); ok {
		id, _ := strconv.ParseInt(idText, 10, 64)
		if name, found := byID[id]; found {
			writeJSON(w, repos[name].repo)
			return
		}
		http.NotFound(w, r)
		return
	}
	if org, ok := strings.CutPrefix(r.URL.Path, "/orgs/"); ok && strings.HasSuffix(org, "/repos") {
		var list []obj
		for _, name := range orgs[strings.TrimSuffix(org, "/repos")] {
			list = append(list, repos[name].repo)
		}
		writePage(w, r, f.server.URL, list, page)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/repos/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 {
		http.NotFound(w, r)
		return
	}
	repo := repos[parts[0]+"/"+parts[1]]
	if repo == nil {
		http.NotFound(w, r)
		return
	}
	if len(parts) == 2 {
		writeJSON(w, repo.repo)
		return
	}
	var list []obj
	switch parts[2] {
	case "issues":
		list = repo.issues
	case "pulls":
		list = repo.pulls
	case "labels":
		list = repo.labels
	case "milestones":
		list = repo.milestones
	default:
		http.NotFound(w, r)
		return
	}
	writePage(w, r, f.server.URL, list, page)
}

// writePage answers one page of list with GitHub's Link header while more pages follow.
func writePage(w http.ResponseWriter, r *http.Request, base string, list []obj, page int) {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	from := min((page-1)*per, len(list))
	to := min(from+per, len(list))
	if to < len(list) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?per_page=%d&page=%d>; rel="next"`, base, r.URL.Path, per, page+1))
	}
	out := list[from:to]
	if out == nil {
		out = []obj{}
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Objects in GitHub's REST shapes.

func user(id int64, login string) obj {
	return obj{"id": id, "login": login, "type": "User", "avatar_url": "https://avatars.example/" + login}
}

func repository(id int64, fullName string, ownerID int64) obj {
	owner, name, _ := strings.Cut(fullName, "/")
	return obj{
		"id": id, "name": name, "full_name": fullName, "private": false, "visibility": "public",
		"owner": user(ownerID, owner), "default_branch": "main", "html_url": "https://github.com/" + fullName,
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-02T00:00:00Z", "pushed_at": "2024-01-03T00:00:00Z",
	}
}

// issue is an issue of the repository whose label and milestone ids start at base.
func issue(base, id int64, number int, title, updatedAt string) obj {
	return obj{
		"id": id, "number": number, "title": title, "state": "open", "body": "body of " + title,
		"user": user(7, "octocat"), "labels": []any{obj{"id": base + 501, "name": "bug", "color": "d73a4a", "default": true}},
		"milestone": obj{"id": base + 801, "number": 1, "title": "v1", "state": "open", "creator": user(8, "hubot"),
			"created_at": "2024-01-05T00:00:00Z", "updated_at": "2024-01-06T00:00:00Z"},
		"assignees": []any{}, "comments": 0, "created_at": "2024-02-01T00:00:00Z", "updated_at": updatedAt,
	}
}

func pullRequest(id int64, number int, head string) obj {
	return obj{
		"id": id, "number": number, "title": "Change things", "state": "open", "user": user(7, "octocat"),
		"head":   obj{"ref": "feature", "sha": head},
		"base":   obj{"ref": "main", "sha": fmt.Sprintf("%040x", 1)},
		"labels": []any{}, "assignees": []any{}, "requested_reviewers": []any{},
		"created_at": "2024-03-01T00:00:00Z", "updated_at": "2024-03-01T10:00:00Z", "merged": false,
	}
}

// history is a repository with n issues (ids from base), two pull requests whose issue sides
// are in the issues list too, three labels and one milestone.
func history(id int64, fullName string, base int64, n int) *fakeRepo {
	r := &fakeRepo{repo: repository(id, fullName, 77)}
	for i := 1; i <= n; i++ {
		r.issues = append(r.issues, issue(base, base+int64(i), i, fmt.Sprintf("Issue %d", i), "2024-02-02T00:00:00Z"))
		if i == 50 || i == 150 {
			side := issue(base, base+100000+int64(i), n+i, "PR side", "2024-02-02T00:00:00Z")
			side["pull_request"] = obj{"url": "https://api.github.example/pulls/1"}
			r.issues = append(r.issues, side)
		}
	}
	r.pulls = []obj{pullRequest(base+200001, n+50, fmt.Sprintf("%040x", 51)), pullRequest(base+200002, n+150, fmt.Sprintf("%040x", 52))}
	r.labels = []obj{
		{"id": base + 501, "name": "bug", "color": "d73a4a", "default": true},
		{"id": base + 502, "name": "docs", "color": "0075ca", "default": false},
		{"id": base + 503, "name": "help", "color": "008672", "default": false},
	}
	r.milestones = []obj{{"id": base + 801, "number": 1, "title": "v1", "state": "open", "creator": user(8, "hubot"),
		"created_at": "2024-01-05T00:00:00Z", "updated_at": "2024-01-06T00:00:00Z"}}
	return r
}
