package erasurestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// The inbox keeps the deliveries of other people that mention the person or name a resource
// by the person's login (a comment "@octocat", an event about the repository octocat/app): the
// provider's contract.TextRewrite declarations rewrite the decoded strings of their payloads in
// the inbox step, after the deletion of the deliveries that name the person. The rewrite
// decodes the payload, rewrites every string value and object key, and encodes it again, so
// no content (a backslash before an "n", a quote, a \u escape) can make it cut an escape
// sequence in two: the result is always the same JSON document with other strings.

// placeholders are the names a TextRewrite pattern may use, with the identity half each
// stands for.
var placeholders = []struct {
	name  string
	value func(erasure.Identity) string
}{
	{"{logins}", erasure.Identity.Login},
	{"{emails}", erasure.Identity.Email},
	{"{ids}", erasure.Identity.ID},
}

// maxRewriteRounds bounds how often the rewrites of one string are applied again until the
// string no longer changes. Every declared rewrite settles in two rounds; a string that still
// changes after this many is a row that cannot be rewritten.
const maxRewriteRounds = 8

var (
	// errUnsettled: a string kept changing under the rewrites (the row is reported, never
	// written half-rewritten).
	errUnsettled = errors.New("payload rewrite: a string does not settle")
	// errKeyCollision: a rewritten object key equals another key of its object; writing it
	// would drop one of the two values, so the row is reported instead.
	errKeyCollision = errors.New("payload rewrite: a rewritten key equals another key of its object")
)

// rewriteRule is one compiled TextRewrite.
type rewriteRule struct {
	re   *regexp.Regexp
	repl string
}

// payloadRewrite is a provider's TextRewrite declarations compiled for one scope. The zero
// value rewrites nothing.
type payloadRewrite struct {
	rules []rewriteRule
	// needles are the identity values the compiled rules name: a string a rule matches
	// contains one of them, ignoring the case of ASCII letters (the SQL candidate filter).
	needles []string
}

// caseless is v as a regular expression that matches v literally, ignoring the case of ASCII
// letters only (so the SQL filter, which folds ASCII letters alone, finds every string it
// matches).
func caseless(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteString("[" + string(r) + string(r-'a'+'A') + "]")
		case r >= 'A' && r <= 'Z':
			b.WriteString("[" + string(r-'A'+'a') + string(r) + "]")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

// alternation is the values as one case-insensitive (ASCII) alternation, longest first.
func alternation(values []string) string {
	values = slices.Clone(values)
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	alts := make([]string, len(values))
	for i, v := range values {
		alts[i] = caseless(v)
	}
	return `(?:` + strings.Join(alts, "|") + `)`
}

// checkTextRewrites refuses a declaration whose pattern names no placeholder or does not
// compile.
func checkTextRewrites(f contract.PersonFields) error {
	for _, t := range f.Text {
		p, named := t.Pattern, false
		for _, ph := range placeholders {
			if strings.Contains(p, ph.name) {
				named = true
				p = strings.ReplaceAll(p, ph.name, alternation([]string{"x"}))
			}
		}
		if !named {
			return fmt.Errorf("person fields of %s: text pattern %q names no {logins}, {emails} or {ids}", f.Provider, t.Pattern)
		}
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Errorf("person fields of %s: text pattern %q: %w", f.Provider, t.Pattern, err)
		}
	}
	return nil
}

// newPayloadRewrite compiles the rewrites of text for scope: each pattern with the scope's
// values in place of its placeholders. A rewrite whose placeholder has no value is left out.
func newPayloadRewrite(text []contract.TextRewrite, scope erasure.Scope) (payloadRewrite, error) {
	values := map[string][]string{}
	for _, ph := range placeholders {
		seen := map[string]bool{}
		for _, i := range scope.Identities() {
			if v := ph.value(i); v != "" && !seen[strings.ToLower(v)] {
				seen[strings.ToLower(v)] = true
				values[ph.name] = append(values[ph.name], v)
			}
		}
	}
	var out payloadRewrite
	used := map[string]bool{}
	for _, t := range text {
		p, skip := t.Pattern, false
		var names []string
		for _, ph := range placeholders {
			if !strings.Contains(p, ph.name) {
				continue
			}
			if len(values[ph.name]) == 0 {
				skip = true
				break
			}
			p = strings.ReplaceAll(p, ph.name, alternation(values[ph.name]))
			names = append(names, ph.name)
		}
		if skip {
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return payloadRewrite{}, fmt.Errorf("text pattern %q: %w", t.Pattern, err)
		}
		out.rules = append(out.rules, rewriteRule{re: re, repl: t.Replacement})
		for _, n := range names {
			if !used[n] {
				used[n] = true
				out.needles = append(out.needles, values[n]...)
			}
		}
	}
	return out, nil
}

// String rewrites one decoded string: every rule in order, again until nothing changes.
func (p payloadRewrite) String(s string) (string, bool, error) {
	orig := s
	for round := 0; round < maxRewriteRounds; round++ {
		next := s
		for _, r := range p.rules {
			next = r.re.ReplaceAllString(next, r.repl)
		}
		if next == s {
			return s, s != orig, nil
		}
		s = next
	}
	return orig, false, errUnsettled
}

// Payload rewrites every string value and object key of the JSON document raw. changed is
// false (and out nil) when no string changed. Numbers, literals and structure are kept (a
// number keeps its literal); keys come out sorted, which a jsonb column does not keep anyway.
// Errors: a document that is not one JSON value, errUnsettled, errKeyCollision.
func (p payloadRewrite) Payload(raw []byte) (out []byte, changed bool, err error) {
	if len(p.rules) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, false, fmt.Errorf("payload rewrite: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false, errors.New("payload rewrite: more than one JSON value")
	}
	doc, changed, err = p.value(doc)
	if err != nil || !changed {
		return nil, false, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, false, fmt.Errorf("payload rewrite: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true, nil
}

// value rewrites v (a decoded JSON value) in place where it can and returns it.
func (p payloadRewrite) value(v any) (any, bool, error) {
	switch x := v.(type) {
	case string:
		return p.String(x)
	case []any:
		changed := false
		for i := range x {
			nv, c, err := p.value(x[i])
			if err != nil {
				return nil, false, err
			}
			x[i], changed = nv, changed || c
		}
		return x, changed, nil
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, val := range x {
			nk, kc, err := p.String(k)
			if err != nil {
				return nil, false, err
			}
			nv, vc, err := p.value(val)
			if err != nil {
				return nil, false, err
			}
			if _, dup := out[nk]; dup {
				return nil, false, errKeyCollision
			}
			out[nk], changed = nv, changed || kc || vc
		}
		return out, changed, nil
	default:
		return v, false, nil
	}
}
