// Package restkit is what the provider REST clients (GitHub's, GitLab's, Outline's) share:
// the check of the API root they are configured with, and the bounded reading of an answer's
// body. The configured root is never echoed in an error: a malformed URL may still hold
// credentials.
package restkit

import (
	"errors"
	"net/url"
	"strings"
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
