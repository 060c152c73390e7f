package inbox

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzWellFormedPayload: the one-pass check accepts exactly the bodies that every payload rule
// accepts (UTF-8, no raw NUL, json.Valid, no \u0000 escape), so ValidatePayload answers as
// the rules do, reason included.
func FuzzWellFormedPayload(f *testing.F) {
	for _, s := range []string{``, ` `, `{}`, `[]`, `[1,2,{"a":[true,false,null]}]`, `{"a":"\u0000"}`, `{"a":"\\u0000"}`,
		`"x"`, `-0.5e+10`, `01`, `1.`, `.5`, `-`, `1e`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{"a":1 "b":2}`, ` [ ] `, `[}`, `{]`,
		"{\"a\":\"\xff\"}", "{\"a\":\"x\x00\"}", "\x00", `"\uD800"`, `"\ud83d\ude00"`, `"é"`, "\"\xed\xa0\x80\"", `tru`,
		`nul`, `falsey`, `{"a":{"b":{"c":[[[]]]}}}`, `"\x"`, `"\u12G4"`, "\"\t\"", `{"x":1}{}`, `[1 2]`, `"abc`, `{"a":}`,
		`{:1}`, `{1:1}`, "\ufeff{}", `1 `, ` 1`, `[-]`, `[-01]`, `[1e5,1E-5,0.0]`,
		`"\udc00"`, `"\ud800\u0041"`, `"\ud800x\udc00"`, `"\ud800\\udc00"`, `["\ud800","\udc00"]`, `"\\ud800"`, `"\uDBFF\uDFFF"`,
		`"\ud800\n"`, `"a\ud800"`, `{"\ud800":1}`,
		`1e131071`, `1e131072`, `9.99e131071`, `0.01e131073`, `1e-16383`, `1e-16384`, `0.0e-16383`, `0e200000`,
		`0e1073741822`, `0e1073741823`, `-1E+1073741823`, `1.5e-16382`, `[1e99999999999999999999]`, `0.` + strings.Repeat("0", 16383),
		`0.` + strings.Repeat("0", 16382) + `1`, strings.Repeat("9", 16384), `1` + strings.Repeat("0", 131072),
		`{"body":"` + strings.Repeat("abcdefgh", 40) + `\"` + strings.Repeat("x", 13) + `é\\"}`,
	} {
		f.Add([]byte(s))
	}
	for _, d := range []int{maxPayloadDepth - 1, maxPayloadDepth, maxPayloadDepth + 1} {
		f.Add([]byte(strings.Repeat("[", d) + strings.Repeat("]", d)))
		f.Add([]byte(strings.Repeat(`{"a":`, d) + "1" + strings.Repeat("}", d)))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var rules error
		switch {
		case len(body) == 0, !utf8.Valid(body), bytes.IndexByte(body, 0) >= 0, !json.Valid(body), hasEscapedNUL(body),
			hasLoneSurrogate(body), hasNumberOutOfRange(body):
			rules = ErrInvalidPayload
		}
		if got := WellFormedPayload(body); got != (rules == nil) {
			t.Fatalf("%q: well-formed %v, rules %v", body, got, rules)
		}
		if got := ValidatePayload(body); (got == nil) != (rules == nil) {
			t.Fatalf("%q: ValidatePayload %v, rules %v", body, got, rules)
		}
	})
}
