package console

import (
	"net/url"
	"path"
	"strings"
)

// nextField carries a deep link through sign-in: the query of the sign-in form's address and a
// hidden field of the form.
const nextField = "next"

// maxDeepLink bounds a deep link (a filtered deliveries page is a few hundred bytes).
const maxDeepLink = 2048

// signInPath is the sign-in form's address that opens requestURI after sign-in.
func signInPath(requestURI string) string {
	if deepLink(requestURI) == "" {
		return Path + "/sign-in"
	}
	return Path + "/sign-in?" + url.Values{nextField: {requestURI}}.Encode()
}

// deepLink is raw when it is a page of this console to open after sign-in, and "" otherwise
// (then sign-in opens the workspaces). Only a relative path under /console/ with an optional
// query is one: no scheme, host or user ("https://…", "//evil", "/\evil" that browsers read
// as "//evil"), no backslash, whitespace or control character anywhere (browsers drop tabs
// and newlines, turning "/\t/evil" into "//evil"), no percent-encoding in the path
// ("/console/%2e%2e/evil" is "/evil" to a browser), no dot or empty segment, no fragment, and
// not the sign-in or sign-out pages themselves. It is checked when the form is shown and again
// when it is posted, since the posted field is the client's to change.
func deepLink(raw string) string {
	if raw == "" || len(raw) > maxDeepLink || !strings.HasPrefix(raw, Path+"/") {
		return ""
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f || r == '\\' || r > 0x7e {
			return ""
		}
	}
	pathPart, _, _ := strings.Cut(raw, "?")
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || strings.Contains(raw, "#") {
		return ""
	}
	// The path must be its own decoded and clean form: no percent-encoding (no console page has
	// one; decoded, it may be a "/", "\" or "." the other checks did not see), no "..", ".",
	// "//" or trailing "/".
	if u.Path != pathPart || path.Clean(u.Path) != u.Path {
		return ""
	}
	switch u.Path {
	case Path + "/sign-in", Path + "/sign-out":
		return ""
	}
	return raw
}

// signInView is the sign-in form's own data.
type signInView struct {
	Next string // the page to open after sign-in ("" the workspaces)
}
