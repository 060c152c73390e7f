package restkit

import "strings"

// NextLink is the target of an RFC 8288 Link header's rel="next" link, if it has one (GitHub's
// and GitLab's pagination). It only parses: whether a client follows the link, rebuilds it
// under its own API root, or just reads a parameter from it is the client's decision. A link's rel may list
// several relation types ("next last"), quoted or not; names compare case-insensitively.
// Parsing stops at the first entry that is not a <target> followed by ";"-separated
// parameters, so a malformed header yields no link.
func NextLink(header string) (string, bool) {
	rest := strings.TrimSpace(header)
	for strings.HasPrefix(rest, "<") {
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return "", false
		}
		target, params := rest[1:end], rest[end+1:]
		rest = ""
		if i := strings.IndexByte(params, ','); i >= 0 {
			params, rest = params[:i], strings.TrimSpace(params[i+1:])
		}
		// Each parameter follows a ";" (RFC 8288 link-value): text after the target without
		// one is not a parameter.
		params = strings.TrimSpace(params)
		if params == "" {
			continue
		}
		if params[0] != ';' {
			return "", false
		}
		for _, p := range strings.Split(params[1:], ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
				continue
			}
			for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(v), `"`)) {
				if strings.EqualFold(rel, "next") {
					return target, true
				}
			}
		}
	}
	return "", false
}
