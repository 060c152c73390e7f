// Package restkit is what the provider API clients share, so a client keeps only its
// endpoints, its authentication header and its provider's rate-limit headers:
//
//   - Setup: the configuration every REST client has (API root, HTTP client, body bound), its
//     defaults and its check (ParseRoot); the configured root is never echoed in an error, as a
//     malformed URL may still hold credentials;
//   - Call: one request and its answer mapped to the inbox's failure table (Status, around a
//     *StatusError), the bounded reading and decoding of a 2xx body (Do);
//   - OAuth: the install flows' OAuth exchange (NewOAuth, Send) and its errors (Unavailable,
//     Refused with only a well-formed error code);
//   - Close, ReadAtMost, NextLink: bounded bodies and RFC 8288 pagination links;
//   - HTTPClient, Transport: the traced transport every client sends through (trace.go).
package restkit

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

var (
	// ErrMissing: the root is empty.
	ErrMissing = errors.New("is required")
	// ErrNotAbsolute: the root is not an absolute http(s) URL with a host.
	ErrNotAbsolute = errors.New("must be an absolute http(s) URL")
	// ErrNotARoot: the root carries credentials, a query or a fragment.
	ErrNotARoot = errors.New("must carry no credentials, query or fragment")
)

// ParseRoot is the API root raw names: an absolute http(s) URL with a host and nothing a path
// could not be appended to, its trailing slashes removed, so each API path ("/repos/…")
// is appended to its path. Errors: ErrMissing, ErrNotAbsolute, ErrNotARoot.
func ParseRoot(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, ErrMissing
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, ErrNotAbsolute
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, ErrNotARoot
	}
	return u, nil
}

// DefaultTimeout is the timeout of a REST client's default HTTP client.
const DefaultTimeout = 30 * time.Second

// Setup is what every REST client's New does with the configuration it shares: an unset *hc
// becomes HTTPClient with a 30 s timeout and an unset *maxBody defaultMaxBody; then the body
// bound must not be negative and baseURL must be an API root (ParseRoot), which it answers.
// name starts each error ("gitlab api"), hint is a root as expected ("https://<host>/api/v4").
func Setup(name, hint, baseURL string, hc **http.Client, maxBody *int64, defaultMaxBody int64) (*url.URL, error) {
	if *hc == nil {
		*hc = HTTPClient(DefaultTimeout)
	}
	if *maxBody == 0 {
		*maxBody = defaultMaxBody
	}
	if *maxBody < 0 {
		return nil, errors.New(name + ": MaxBodyBytes must not be negative")
	}
	u, err := ParseRoot(baseURL)
	if err != nil {
		return nil, fmt.Errorf("%s: BaseURL %w (%s)", name, err, hint)
	}
	return u, nil
}
