package provider_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

func TestCanonicalServerURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://github.com":             "https://github.com",
		"https://GitHub.com:443/":        "https://github.com",
		"HTTPS://GITHUB.COM":             "https://github.com",
		"https://github.com///":          "https://github.com",
		"http://gitlab.example:80/":      "http://gitlab.example",
		"http://gitlab.example:443/":     "http://gitlab.example:443",
		"https://gitlab.example:80":      "https://gitlab.example:80",
		"https://ghe.example:08443/api/": "https://ghe.example:8443/api",
		"https://ghe.example/GHE/Path/":  "https://ghe.example/GHE/Path",
		"https://[::1]:443/":             "https://[::1]",
		"http://[FE80::1]:8080":          "http://[fe80::1]:8080",
		"https://127.0.0.1:8443/x/":      "https://127.0.0.1:8443/x",
		"https://outline.example/a%2Fb/": "https://outline.example/a%2Fb",
	} {
		got, err := provider.CanonicalServerURL(raw)
		if err != nil || got != want {
			t.Errorf("CanonicalServerURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{
		"", "github.com", "/relative", "ftp://github.com", "mailto:a@b.c", "https://", "https:///path",
		"https://user:secret@github.com", "https://user@github.com", "https://github.com/@octocat", "https://github.com?x=1", "https://github.com/?",
		"https://github.com#top", "https://github.com/#", "https://github.com:0", "https://github.com:65536",
		"https://github.com:", "https://git%20hub.com", "https://[fe80::1%25eth0]", "https://exa mple.com",
		"https://" + strings.Repeat("a", provider.MaxServerURLLength),
	} {
		got, err := provider.CanonicalServerURL(raw)
		if !errors.Is(err, provider.ErrInvalidServerURL) {
			t.Errorf("CanonicalServerURL(%q) = %q, %v; want ErrInvalidServerURL", raw, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error repeats the URL's password: %v", err)
		}
	}
}

// FuzzCanonicalServerURL: never panics; what it accepts is canonical already (a second pass
// changes nothing) and is an absolute http(s) URL without userinfo, query or fragment.
func FuzzCanonicalServerURL(f *testing.F) {
	for _, s := range []string{"https://GitHub.com:443/", "http://h:80", "https://[::1]:8443/a/", "https://u:p@h", "https://h?q#f", "HTTP://H.example:0080//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := provider.CanonicalServerURL(raw)
		if err != nil {
			if !errors.Is(err, provider.ErrInvalidServerURL) {
				t.Fatalf("%q: error %v is not ErrInvalidServerURL", raw, err)
			}
			return
		}
		again, err := provider.CanonicalServerURL(c)
		if err != nil || again != c {
			t.Fatalf("%q canonicalised to %q, which canonicalises to %q, %v", raw, c, again, err)
		}
		if !strings.HasPrefix(c, "https://") && !strings.HasPrefix(c, "http://") || strings.ContainsAny(c, "?#@") || strings.HasSuffix(c, "/") {
			t.Fatalf("%q canonicalised to %q", raw, c)
		}
	})
}
