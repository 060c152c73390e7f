package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValid: Rules.Valid, with every combination of its rules, accepts exactly the bodies that
// encoding/json accepts (json.Valid) and that are UTF-8 and meet the same rules as checked
// here by independent readers: one that counts backslashes for \u0000, one that pairs
// surrogate escapes, and encoding/json's tokens for the numbers.
func FuzzValid(f *testing.F) {
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
		"\"a\u2028b\u2029\"", `[12345678901,123456789012,1E5]`,
	} {
		f.Add([]byte(s))
	}
	for _, d := range []int{MaxDepth - 1, MaxDepth, MaxDepth + 1} {
		f.Add([]byte(strings.Repeat("[", d) + strings.Repeat("]", d)))
		f.Add([]byte(strings.Repeat(`{"a":`, d) + "1" + strings.Repeat("}", d)))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		valid := json.Valid(body) && utf8.Valid(body)
		for _, c := range []struct {
			rules Rules
			want  bool
		}{
			{Rules{}, valid},
			{Rules{NoEscapedNUL: true}, valid && !hasEscapedNUL(body)},
			{Rules{PairedSurrogates: true}, valid && !hasLoneSurrogate(body)},
			{Rules{Number: shortNumber}, valid && everyNumber(body, shortNumber)},
			{Rules{NoEscapedNUL: true, PairedSurrogates: true, Number: shortNumber},
				valid && !hasEscapedNUL(body) && !hasLoneSurrogate(body) && everyNumber(body, shortNumber)},
		} {
			if got := c.rules.Valid(body); got != c.want {
				t.Fatalf("%q: Valid with NoEscapedNUL %v, PairedSurrogates %v, Number %v: %v, want %v",
					body, c.rules.NoEscapedNUL, c.rules.PairedSurrogates, c.rules.Number != nil, got, c.want)
			}
		}
	})
}

// shortNumber is a Number rule that depends on the exact text of a number: at most 11 bytes,
// and no capital E.
func shortNumber(n []byte) bool { return len(n) <= 11 && bytes.IndexByte(n, 'E') < 0 }

// hasEscapedNUL finds a \u0000 escape, counting preceding backslashes so that an escaped
// backslash followed by "u0000" (the text \u0000) is not mistaken for one. It reads a body
// json.Valid accepted, where every backslash is inside a string.
func hasEscapedNUL(body []byte) bool {
	for i := 0; i+5 < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] == 'u' && string(body[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character, so "\\" does not start another escape
	}
	return false
}

// hasLoneSurrogate finds a \u escape of a UTF-16 surrogate that is not one half of a pair
// (high D800-DBFF immediately followed by a low DC00-DFFF escape). It reads a body json.Valid
// accepted.
func hasLoneSurrogate(body []byte) bool {
	pendingHigh := false // the previous escape was a high surrogate, ending at end
	end := -1
	for i := 0; i+1 < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' || i+6 > len(body) {
			if pendingHigh {
				return true
			}
			i++ // skip the escaped character, so "\\" does not start another escape
			continue
		}
		v, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		if err != nil {
			return false // not JSON: json.Valid says so
		}
		high, low := 0xD800 <= v && v <= 0xDBFF, 0xDC00 <= v && v <= 0xDFFF
		switch {
		case pendingHigh && (!low || i != end):
			return true
		case pendingHigh:
			pendingHigh = false
		case low:
			return true
		case high:
			pendingHigh = true
		}
		i += 5
		end = i + 1
	}
	return pendingHigh
}

// everyNumber reports whether rule holds for every number of body as encoding/json's tokens
// see them (UseNumber keeps the text). It reads a body json.Valid accepted.
func everyNumber(body []byte, rule func([]byte) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if n, ok := tok.(json.Number); ok && !rule([]byte(n)) {
			return false
		}
	}
}
