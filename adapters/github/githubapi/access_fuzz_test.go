package githubapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// answer is a transport that answers every request with one status, header and body, and
// remembers the request, so the fuzz target runs without a server.
type answer struct {
	status int
	header http.Header
	body   []byte
	seen   *http.Request
}

func (a *answer) RoundTrip(r *http.Request) (*http.Response, error) {
	a.seen = r
	return &http.Response{StatusCode: a.status, Header: a.header, Body: io.NopCloser(bytes.NewReader(a.body)), Request: r}, nil
}

// FuzzRepositoryAccess feeds GitHub answers to the PAT access check: it admits only a 200 whose
// body names the requested repository id, refuses only 401, 403 that is no rate limit and 404,
// treats everything else as no answer, sends the token only as the bearer of
// /repositories/{id}, and never puts the token into an error. Seeds: testdata/fuzz.
func FuzzRepositoryAccess(f *testing.F) {
	f.Fuzz(func(t *testing.T, repo int64, status int, remaining string, body []byte) {
		if repo <= 0 || status < 100 || status > 999 {
			t.Skip()
		}
		const token = "ghp_fuzz-secret-token"
		tr := &answer{status: status, header: http.Header{"X-Ratelimit-Remaining": {remaining}}, body: body}
		a, err := githubapi.NewRepositoryAccess(githubapi.AccessConfig{BaseURL: "https://api.example.com",
			HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatInt(repo, 10)
		_, err = a.CheckAccess(context.Background(), contract.AccessTarget{WorkspaceID: 1, ConnectionID: 1, Credential: []byte(token)}, ports.Resource{Type: "repository", ID: id})
		if tr.seen == nil || tr.seen.URL.Path != "/repositories/"+id || tr.seen.Header.Get("Authorization") != "Bearer "+token {
			t.Fatalf("request %v", tr.seen)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Fatalf("the token leaked into %q", err)
		}
		var rej *ports.RejectedError
		refused := errors.As(err, &rej) && errors.Is(err, ports.ErrForbidden) && rej.Reason == contract.ReasonResourceNotAccessible
		switch {
		case status == 401 || status == 404 || (status == 403 && remaining != "0"):
			if !refused {
				t.Fatalf("status %d: %v, want a refusal", status, err)
			}
		case status == 200:
			if err == nil && !bytes.Contains(body, []byte(id)) {
				t.Fatalf("admitted a body without the id %s: %q", id, body)
			}
		default:
			if err == nil || refused {
				t.Fatalf("status %d: %v, want no verdict", status, err)
			}
		}
	})
}
