package admissionstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzHeadersJSON: headersJSON writes the JSON value json.Marshal writes for the same
// headers: the same members in the same order, each name and value decoding to the same string
// (invalid UTF-8 as U+FFFD), whatever the bytes; and its text is UTF-8 throughout, since jsonb
// refuses any other (encoding/json's decoder would hide a raw invalid byte by replacing it).
// The texts may differ only in escapes that decode alike (json.Marshal also escapes <, >, &,
// U+2028 and U+2029), which jsonb does not keep. The seeds in testdata/fuzz hold invalid
// UTF-8, control characters, quotes, backslashes, U+2028 and names that sort differently as
// bytes and as runes.
func FuzzHeadersJSON(f *testing.F) {
	f.Add("X-GitHub-Event", "issues", "Hephaestus-Source-Server-Url", "https://github.com")
	f.Fuzz(func(t *testing.T, name1, value1, name2, value2 string) {
		for _, h := range []map[string]string{{}, {name1: value1}, {name1: value1, name2: value2}} {
			got := headersJSON(h)
			want, err := json.Marshal(h)
			if err != nil {
				t.Fatalf("json.Marshal(%q): %v", h, err)
			}
			if !json.Valid(got) || !utf8.Valid(got) {
				t.Fatalf("headersJSON(%q) = %q is not UTF-8 JSON (jsonb reads only that)", h, got)
			}
			g, w := jsonTokens(t, got), jsonTokens(t, want)
			if !slices.Equal(g, w) {
				t.Fatalf("headersJSON(%q)\n = %q, tokens %q\nwant %q, tokens %q", h, got, g, want, w)
			}
		}
	})
}

// jsonTokens is b's token stream (delimiters and decoded strings) in order.
func jsonTokens(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, v.String())
		case string:
			out = append(out, "s:"+v)
		default:
			t.Fatalf("%q: unexpected token %#v", b, tok)
		}
	}
}
