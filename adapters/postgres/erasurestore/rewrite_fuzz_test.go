package erasurestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// The person every declaration is compiled for.
const (
	fuzzLogin     = "octocat"
	fuzzEmail     = "victim+1@example.com"
	fuzzSlackID   = "U024BE7LH"
	fuzzOutlineID = "5e5e5e5e-0000-4000-8000-0000000000aa"
)

// rewriteCase is one provider's declaration compiled for the person, and a check, written
// independently of the declaration's patterns, that a decoded string still names the person
// where the declaration promises to rewrite it.
type rewriteCase struct {
	name  string
	rw    payloadRewrite
	names func(s string) bool
}

func compiled(t testing.TB, f contract.PersonFields, id, login, email string) payloadRewrite {
	t.Helper()
	if err := checkTextRewrites(f); err != nil {
		t.Fatal(err)
	}
	i, err := erasure.NewIdentity(id, login, email)
	if err != nil {
		t.Fatal(err)
	}
	scope, err := erasure.NewScope(f.Provider, "https://example.com", []erasure.Identity{i})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := newPayloadRewrite(f.Text, scope)
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.rules) != len(f.Text) {
		t.Fatalf("%s: %d of %d rewrites compiled", f.Provider, len(rw.rules), len(f.Text))
	}
	return rw
}

func rewriteCases(t testing.TB) []rewriteCase {
	return []rewriteCase{
		{"github", compiled(t, github.PersonFields(), "583231", fuzzLogin, fuzzEmail), func(s string) bool {
			return namesByEmail(s) || mentions(s, "_-") || ownsPath(s)
		}},
		{"gitlab", compiled(t, gitlab.PersonFields(), "583231", fuzzLogin, fuzzEmail), func(s string) bool {
			return namesByEmail(s) || mentions(s, "_.-") || ownsPath(s)
		}},
		{"slack", compiled(t, slack.PersonFields(), fuzzSlackID, "", ""), slackMention},
		{"outline", compiled(t, outline.PersonFields(), fuzzOutlineID, "", ""), func(s string) bool {
			return token(s, fuzzOutlineID, "-", "-")
		}},
	}
}

// fold lowers ASCII letters only, as the rewrite's placeholders ignore only their case.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// word is true when c is a letter, a digit or one of extra.
func word(c byte, extra string) bool { return alnum(c) || strings.IndexByte(extra, c) >= 0 }

// occurrences are the indexes of v in s, ASCII case ignored.
func occurrences(s, v string) []int {
	var at []int
	fs, fv := fold(s), fold(v)
	for i := 0; ; {
		j := strings.Index(fs[i:], fv)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + 1
	}
}

// token is true when s holds v not preceded by a letter, digit or one of before, and not
// followed by a letter, digit or one of after.
func token(s, v, before, after string) bool {
	for _, i := range occurrences(s, v) {
		end := i + len(v)
		if (i == 0 || !word(s[i-1], before)) && (end == len(s) || !word(s[end], after)) {
			return true
		}
	}
	return false
}

// namesByEmail: a trailer line holding the address anywhere, or the address anywhere else
// but within a longer address (a sentence's full stop after it is no part of it).
func namesByEmail(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		l := strings.TrimLeft(line, " \t")
		key, _, ok := strings.Cut(l, ":")
		if ok && len(key) > 3 && strings.EqualFold(key[len(key)-3:], "-by") && isTrailerKey(key) &&
			len(occurrences(line, fuzzEmail)) > 0 {
			return true
		}
	}
	for _, i := range occurrences(s, fuzzEmail) {
		end := i + len(fuzzEmail)
		if i > 0 && word(s[i-1], "._%+-") {
			continue
		}
		switch {
		case end == len(s), !word(s[end], "_.-"):
			return true
		case s[end] == '.' && (end+1 == len(s) || !word(s[end+1], "_-")):
			return true
		}
	}
	return false
}

// isTrailerKey: a letter, then letters and hyphens.
func isTrailerKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c != '-') {
			return false
		}
	}
	return true
}

// mentions: "@login" not preceded by a letter, digit or one of before, and not followed by a
// letter, digit, '_' or '-'.
func mentions(s, before string) bool {
	for _, i := range occurrences(s, "@"+fuzzLogin) {
		end := i + 1 + len(fuzzLogin)
		if (i == 0 || !word(s[i-1], before)) && (end == len(s) || !word(s[end], "_-")) {
			return true
		}
	}
	return false
}

// ownsPath: the string is the login or starts with it as a path's first segment
// ("login/repo"), or is a URL whose first path segment it is.
func ownsPath(s string) bool {
	rest := s
	if i := strings.Index(s, "://"); i > 0 && isScheme(s[:i]) {
		if j := strings.IndexByte(s[i+3:], '/'); j > 0 {
			rest2 := s[i+3+j+1:]
			if ownsStart(rest2) {
				return true
			}
		}
	}
	return ownsStart(rest)
}

func ownsStart(s string) bool {
	if len(s) < len(fuzzLogin) || fold(s[:len(fuzzLogin)]) != fuzzLogin {
		return false
	}
	return len(s) == len(fuzzLogin) || strings.IndexByte("/?#", s[len(fuzzLogin)]) >= 0
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-')) {
			return false
		}
	}
	return s != ""
}

// slackMention: "<@ID>" or "<@ID|…>".
func slackMention(s string) bool {
	for _, i := range occurrences(s, "<@"+fuzzSlackID) {
		rest := s[i+2+len(fuzzSlackID):]
		if strings.HasPrefix(rest, ">") || strings.HasPrefix(rest, "|") && strings.Contains(rest, ">") {
			return true
		}
	}
	return false
}

// strs lists every string value and object key of a decoded document.
func strs(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		return append(out, x)
	case []any:
		for _, e := range x {
			out = strs(e, out)
		}
	case map[string]any:
		for k, e := range x {
			out = strs(e, append(out, k))
		}
	}
	return out
}

// skeleton is the document without its strings: numbers by their literal, literals, array
// order, and each object's members as a sorted list (keys may be rewritten).
func skeleton(v any) string {
	switch x := v.(type) {
	case string:
		return "s"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = skeleton(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		var parts []string
		for _, e := range x {
			parts = append(parts, skeleton(e))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	default:
		return fmt.Sprint(x)
	}
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// checkRewrite rewrites payload with c and checks the promises: valid JSON, the same document
// but for its strings, no string naming the person, and nothing more to rewrite.
func checkRewrite(t *testing.T, c rewriteCase, payload []byte) {
	t.Helper()
	out, changed, err := c.rw.Payload(payload)
	if errors.Is(err, errKeyCollision) {
		return // reported by id and retried, never written
	}
	if err != nil {
		t.Fatalf("%s: rewrite %q: %v", c.name, payload, err)
	}
	if !changed {
		out = payload
	}
	if !json.Valid(out) {
		t.Fatalf("%s: rewrite of %q is no JSON: %q", c.name, payload, out)
	}
	in, got := decode(t, payload), decode(t, out)
	if skeleton(in) != skeleton(got) {
		t.Fatalf("%s: rewrite of %q changed more than strings: %q", c.name, payload, out)
	}
	for _, s := range strs(got, nil) {
		if c.names(s) {
			t.Fatalf("%s: rewrite of %q still names the person in %q", c.name, payload, s)
		}
	}
	again, changedAgain, err := c.rw.Payload(out)
	if err != nil || changedAgain {
		t.Fatalf("%s: rewrite of %q is not idempotent: %q then %q (%v)", c.name, payload, out, again, err)
	}
}

// FuzzPayloadRewrite feeds every provider's rewrite a fuzzed string placed as a value, a key
// and an array element of a payload, and a fuzzed JSON text as a whole payload (backslashes,
// quotes, \u escapes, surrogate pairs, trailer-like text).
func FuzzPayloadRewrite(f *testing.F) {
	f.Add("see C:\\nSigned-off-by: Victim <victim+1@example.com>", []byte(`{"body":"see C:\\nSigned-off-by: Victim <victim+1@example.com>"}`))
	f.Add("Fix\n\nSigned-off-by: Victim <VICTIM+1@example.com>\nReviewed-by: Bo <bo@example.org>", []byte(`{"m":"x\nCo-authored-by: V <victim+1@example.com>"}`))
	f.Add("\\\"@octocat\\\" and @OctoCat, @octocat-bot", []byte(`{"a":"\"@octocat\"","\u0040octocat":1}`))
	f.Add("https://github.com/octocat/hello-world", []byte(`["octocat/x","https://github.com/OCTOCAT?tab=1",1e400,-0.000,12345678901234567890123]`))
	f.Add("\U0001F600 <@U024BE7LH|mona> <@U024BE7LH>", []byte(`{"t":"\ud83d\ude00<@U024BE7LH>\u00e9"}`))
	f.Add("@[Mona](mention://x/user/5e5e5e5e-0000-4000-8000-0000000000aa) 5E5E5E5E-0000-4000-8000-0000000000AA", []byte(`{"text":"\\u005e 5e5e5e5e-0000-4000-8000-0000000000aa"}`))
	f.Add("mail victim+1@example.com. or victim+1@example.com.au", []byte(`{"@octocat":"a","@ghost":"b"}`))
	cases := rewriteCases(f)
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		built, err := json.Marshal(map[string]any{
			"body": text, text: []any{text, 1.5, json.Number("12345678901234567890"), true, nil},
			"nested": map[string]any{"list": []string{text, "@" + text, text + "\n" + text}},
		})
		if err != nil {
			t.Fatal(err)
		}
		payloads := [][]byte{built}
		if json.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) {
			payloads = append(payloads, raw)
		}
		for _, c := range cases {
			for _, p := range payloads {
				checkRewrite(t, c, p)
			}
		}
	})
}

func TestPayloadRewrite(t *testing.T) {
	cases := map[string]rewriteCase{}
	for _, c := range rewriteCases(t) {
		cases[c.name] = c
	}
	for _, tc := range []struct {
		provider, in, want string
	}{
		// The crafted comment: a backslash before "nSigned-off-by" is no line break; the
		// address in it is replaced, the JSON stays JSON.
		{"github", `{"body":"see C:\\nSigned-off-by: Victim <victim+1@example.com>"}`, `{"body":"see C:\\nSigned-off-by: Victim <erased@erased.invalid>"}`},
		{"github", `{"m":"Fix\n\nSigned-off-by: V <Victim+1@Example.com>\nReviewed-by: Bo <bo@example.org>"}`, `{"m":"Fix\n\nReviewed-by: Bo <bo@example.org>"}`},
		{"github", `{"m":"Co-Authored-By: V <victim+1@example.com>\nrest"}`, `{"m":"rest"}`},
		{"github", `{"b":"\"@octocat\", @OctoCat and @octocat-bot, x@octocat"}`, `{"b":"\"@ghost\", @ghost and @octocat-bot, x@octocat"}`},
		{"github", `{"a":"@octocat @octocat"}`, `{"a":"@ghost @ghost"}`},
		{"github", `{"r":"Octocat/Hello-World","u":"https://github.com/octocat?tab=1","o":"acme/octocat"}`, `{"o":"acme/octocat","r":"ghost/Hello-World","u":"https://github.com/ghost?tab=1"}`},
		{"github", `{"@octocat":[1e400,-0.0,12345678901234567890123]}`, `{"@ghost":[1e400,-0.0,12345678901234567890123]}`},
		{"github", `{"\u0040octocat":"\ud83d\ude00"}`, `{"@ghost":"😀"}`},
		{"gitlab", `{"n":"cc @octocat, a.@octocat"}`, `{"n":"cc @ghost, a.@octocat"}`},
		{"slack", `{"text":"<@U024BE7LH|mona> and <@u024be7lh>"}`, `{"text":"<@U00000000> and <@U00000000>"}`},
		{"outline", `{"t":"@[Mona](mention://c/user/5e5e5e5e-0000-4000-8000-0000000000aa) 5e5e5e5e-0000-4000-8000-0000000000aa"}`,
			`{"t":"@[erased](mention://c/user/00000000-0000-0000-0000-000000000000) 00000000-0000-0000-0000-000000000000"}`},
	} {
		out, changed, err := cases[tc.provider].rw.Payload([]byte(tc.in))
		if err != nil || !changed || string(out) != tc.want {
			t.Errorf("%s %s: got %s (changed %v, %v), want %s", tc.provider, tc.in, out, changed, err, tc.want)
		}
	}
	if _, _, err := cases["github"].rw.Payload([]byte(`{"@octocat":1,"@ghost":2}`)); !errors.Is(err, errKeyCollision) {
		t.Errorf("a rewritten key equal to another key: %v, want errKeyCollision", err)
	}
	if _, changed, err := cases["github"].rw.Payload([]byte(`{"a":"nothing here","n":1}`)); changed || err != nil {
		t.Errorf("a payload that names nobody: changed %v, %v", changed, err)
	}
}

func TestTextRewriteDeclarations(t *testing.T) {
	for _, f := range []contract.PersonFields{github.PersonFields(), gitlab.PersonFields(), slack.PersonFields(), outline.PersonFields()} {
		if err := checkTextRewrites(f); err != nil {
			t.Error(err)
		}
	}
	bad := contract.PersonFields{Provider: github.Provider, Text: []contract.TextRewrite{{Pattern: `@ghost`}}}
	if err := checkTextRewrites(bad); err == nil {
		t.Error("a pattern without a placeholder was accepted")
	}
	bad.Text[0].Pattern = `(?=x){logins}`
	if err := checkTextRewrites(bad); err == nil {
		t.Error("a pattern Go cannot compile was accepted")
	}
}
