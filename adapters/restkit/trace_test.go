package restkit_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
)

// A provider call's span shows the API's own words and nothing a person or a query put in the
// URL: logins, repository and project names, ids, tokens in the query.
func TestRedactURLKeepsOnlyTheAPIWords(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"https://api.github.com/repos/octocat/hello-world/issues/42/comments?per_page=100&page=2",
			"https://api.github.com/repos/:name/:name/issues/:id/comments"},
		{"https://api.github.com/users/mona-lisa", "https://api.github.com/users/:name"},
		{"https://user:secret@ghe.example/api/v3/app/installations/7/access_tokens",
			"https://ghe.example/api/v3/app/installations/:id/access_tokens"},
		{"https://gitlab.example/api/v4/projects/acme%2Fapi/merge_requests/7/approvals?private_token=glpat-x",
			"https://gitlab.example/api/v4/projects/:name/merge_requests/:id/approvals"},
		{"https://slack.com/api/conversations.history?channel=D0123&token=xoxb-1", "https://slack.com/api/conversations.history"},
		{"https://app.getoutline.com/api/documents.info", "https://app.getoutline.com/api/documents.info"},
		{"https://example.com/mona.lisa/documents.info", "https://example.com/:name/:name"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := restkit.RedactURL(u).String(); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// The request that goes out keeps its real URL: only the span sees the redacted one.
func TestTransportSendsTheRealURL(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.RequestURI()
	}))
	defer srv.Close()
	hc := &http.Client{Transport: restkit.Transport(nil)}
	resp, err := hc.Get(srv.URL + "/repos/octocat/hello/issues?page=2")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got != "/repos/octocat/hello/issues?page=2" {
		t.Fatalf("the provider got %q", got)
	}
	if resp.Request.URL.String() != srv.URL+"/repos/octocat/hello/issues?page=2" {
		t.Fatalf("the answer's request has URL %q", resp.Request.URL)
	}
}
