package githubapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
)

// FuzzHookDeliveries feeds the App's delivery-log reader any answer body and Link header: it
// never panics, every delivery it returns has an id and a guid, the cursor it returns comes
// from the Link header, and only the API root is ever asked. Seeds: testdata/fuzz.
func FuzzHookDeliveries(f *testing.F) {
	// Every input signs a JWT: the smallest key Go accepts keeps fuzz-smoke short (GitHub's
	// App keys are 2048 bits; the reader's behaviour does not depend on the size).
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(200, `[{"id":1,"guid":"a","status_code":502}]`, `<https://api.example/app/hook/deliveries?per_page=100&cursor=v1_1>; rel="next"`)
	f.Add(200, `[]`, ``)
	f.Add(200, `{"message":"no"}`, `<>; rel="next"`)
	f.Add(403, `{"message":"API rate limit exceeded"}`, ``)
	f.Fuzz(func(t *testing.T, status int, body, link string) {
		if status < 100 || status > 999 {
			return
		}
		tr := &answer{status: status, header: http.Header{"Link": {link}}, body: []byte(body)}
		app, err := githubapi.NewApp(githubapi.AppConfig{BaseURL: "https://api.example", AppID: "1", Key: key,
			HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		page, next, err := app.ListHookDeliveries(context.Background(), "")
		if tr.seen == nil || tr.seen.URL.Host != "api.example" || tr.seen.URL.Path != "/app/hook/deliveries" {
			t.Fatalf("asked %v", tr.seen)
		}
		if err != nil {
			if page != nil || next != "" {
				t.Fatalf("an error with a page or cursor: %v %q", page, next)
			}
			return
		}
		for _, d := range page {
			if d.ID <= 0 || d.GUID == "" {
				t.Fatalf("delivery without id or guid: %+v", d)
			}
		}
		if lower := strings.ToLower(link); next != "" && !(strings.Contains(lower, "rel=") && strings.Contains(lower, "next") && strings.Contains(link, ";")) {
			t.Fatalf("cursor %q without a next link", next)
		}
	})
}
