package provider

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// MaxServerURLLength bounds a source server URL.
const MaxServerURLLength = 2048

// ErrInvalidServerURL refuses a source server URL: not an absolute http(s) URL, or one with
// credentials, a query or a fragment. Its wrapping error says which, and never repeats the
// URL (it could carry a password).
var ErrInvalidServerURL = errors.New("invalid source server url")

// A host is a DNS name or an IPv4 address (lower-case after canonicalisation), or an IPv6
// literal without a zone; anything else (percent-encoding, spaces) is no server's name.
var (
	hostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9._~-]*[a-z0-9_~-])?$`)
	hostIPv6 = regexp.MustCompile(`^[0-9a-f:.]+$`)
)

func invalidServerURL(why string) error {
	return fmt.Errorf("%w: it %s", ErrInvalidServerURL, why)
}

// CanonicalServerURL is the one spelling of a source server URL that connections, inbox rows
// (the Hephaestus-Source-Server-Url header), erasure requests and the install flows compare:
// lower-case scheme and host, the scheme's default port dropped (443 for https, 80 for http),
// any other port without leading zeros, the path as written but without trailing slashes.
// "https://GitHub.com:443/" is "https://github.com". It is idempotent.
//
// Errors (wrapping ErrInvalidServerURL): not an absolute http(s) URL, userinfo, a query or a
// fragment (also empty ones), a port outside 1–65535, a host that is no DNS name or IP address,
// longer than MaxServerURLLength.
func CanonicalServerURL(raw string) (string, error) {
	if raw == "" || len(raw) > MaxServerURLLength {
		return "", invalidServerURL("must be 1 to 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", invalidServerURL("is not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "https" && scheme != "http") || u.Opaque != "" || u.Host == "" {
		return "", invalidServerURL("is not an absolute http(s) URL")
	}
	if u.User != nil || strings.Contains(raw, "@") { // an @ in the path reads as userinfo to people
		return "", invalidServerURL("must not carry credentials")
	}
	if u.RawQuery != "" || u.ForceQuery || strings.Contains(raw, "?") {
		return "", invalidServerURL("must not carry a query")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", invalidServerURL("must not carry a fragment")
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case strings.Contains(host, ":"):
		if !hostIPv6.MatchString(host) || !strings.HasPrefix(u.Host, "[") {
			return "", invalidServerURL("has an invalid host")
		}
		host = "[" + host + "]"
	case !hostName.MatchString(host):
		return "", invalidServerURL("has an invalid host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", invalidServerURL("has an invalid port")
		}
		if !(scheme == "https" && n == 443) && !(scheme == "http" && n == 80) {
			host += ":" + strconv.Itoa(n)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", invalidServerURL("has an invalid port")
	}
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/"), nil
}
