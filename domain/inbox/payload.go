package inbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reasons of a PayloadError, as the receiver answers and counts them.
const (
	PayloadNotUTF8 = "invalid-utf8"
	PayloadNotJSON = "invalid-json"
	PayloadNUL     = "nul"
	// PayloadEscape: a \u escape PostgreSQL's jsonb refuses, a lone UTF-16 surrogate
	// (\ud800 without a low surrogate after it, or \udc00 without a high one before it).
	PayloadEscape = "invalid-escape"
	// PayloadNumberRange: a number PostgreSQL's numeric (jsonb's number type) cannot hold:
	// 10^131072 or more, more than 16383 digits after the point, or an exponent past ±2^30.
	PayloadNumberRange = "number-out-of-range"
)

// PayloadReasons lists the reasons of a PayloadError (webhook_rejected_total{reason}).
func PayloadReasons() []string {
	return []string{PayloadNotUTF8, PayloadNotJSON, PayloadNUL, PayloadEscape, PayloadNumberRange}
}

// PayloadError names the rule a body broke. It matches ErrInvalidPayload with errors.Is, so
// callers that only need "invalid or not" keep testing the sentinel.
type PayloadError struct {
	Reason string // PayloadNotUTF8, PayloadNotJSON, PayloadNUL, PayloadEscape or PayloadNumberRange
	detail string
}

func (e *PayloadError) Error() string { return ErrInvalidPayload.Error() + ": " + e.detail }
func (e *PayloadError) Unwrap() error { return ErrInvalidPayload }

// ValidatePayload requires UTF-8 JSON without a raw NUL byte and without a \u0000 escape, so
// that every stored payload can be read as PostgreSQL text (person erasure reads it so), and
// accepts only what PostgreSQL's jsonb input accepts: no lone surrogate escape, no number
// outside numeric's range. A body it accepts is never refused by the insert's jsonb cast, so a
// signed delivery PostgreSQL would refuse is answered 400 (the provider stops retrying) instead
// of 500 (retried forever). specs/inbox compares both against a real database.
// Errors: *PayloadError.
func ValidatePayload(body []byte) error {
	if WellFormedPayload(body) {
		return nil // one pass; only a refusal goes through the rules one by one, for its reason
	}
	switch {
	case len(body) == 0:
		return &PayloadError{Reason: PayloadNotJSON, detail: "empty body"}
	case !utf8.Valid(body):
		return &PayloadError{Reason: PayloadNotUTF8, detail: "not UTF-8"}
	case bytes.IndexByte(body, 0) >= 0:
		return &PayloadError{Reason: PayloadNUL, detail: "raw NUL byte"}
	case !json.Valid(body):
		return &PayloadError{Reason: PayloadNotJSON, detail: "not JSON"}
	case hasEscapedNUL(body):
		return &PayloadError{Reason: PayloadNUL, detail: `escaped NUL (\u0000)`}
	case hasLoneSurrogate(body):
		return &PayloadError{Reason: PayloadEscape, detail: "lone surrogate escape"}
	case hasNumberOutOfRange(body):
		return &PayloadError{Reason: PayloadNumberRange, detail: "number outside PostgreSQL numeric's range"}
	}
	// The one-pass check refused what no rule names (FuzzWellFormedPayload keeps this
	// unreachable): refuse all the same, never store what the check did not accept.
	return &PayloadError{Reason: PayloadNotJSON, detail: "not JSON"}
}

// hasEscapedNUL finds a \u0000 escape inside a JSON string, counting preceding backslashes so
// that an escaped backslash followed by "u0000" (the text \u0000) is not mistaken for one.
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
// (high D800-DBFF immediately followed by a low DC00-DFFF escape), which jsonb refuses. It
// reads a body json.Valid accepted, where every backslash is inside a string.
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
			return false // not JSON: the other rules say so
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

// hasNumberOutOfRange decodes body token by token and checks every number against numeric's
// limits with big-number arithmetic: an implementation independent of the one-pass scanner,
// so that the fuzz target compares two.
func hasNumberOutOfRange(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		s := strings.TrimPrefix(string(n), "-")
		mant, expText, _ := strings.Cut(strings.ToLower(s), "e")
		exp := new(big.Int)
		if expText != "" {
			exp.SetString(strings.TrimPrefix(expText, "+"), 10)
		}
		if exp.CmpAbs(big.NewInt(numericMaxExponent)) >= 0 {
			return true
		}
		whole, frac, _ := strings.Cut(mant, ".")
		scale := new(big.Int).Sub(big.NewInt(int64(len(frac))), exp)
		if scale.Cmp(big.NewInt(numericMaxScale)) > 0 {
			return true
		}
		digits := strings.TrimLeft(whole+frac, "0")
		if digits == "" {
			continue // zero: only its scale counts
		}
		// The decimal weight of the first significant digit: 10^weight ≤ |n| < 10^(weight+1).
		weight := new(big.Int).Add(big.NewInt(int64(len(digits)-len(frac)-1)), exp)
		if weight.Cmp(big.NewInt(numericMaxWeight)) > 0 {
			return true
		}
	}
}

// PostgreSQL numeric's limits (src/backend/utils/adt/numeric.c): the exponent of the input,
// the digits kept after the point (NUMERIC_DSCALE_MAX) and the decimal weight of the first
// digit (NUMERIC_WEIGHT_MAX base-10000 digits, i.e. below 10^131072).
const (
	numericMaxExponent = math.MaxInt32 / 2
	numericMaxScale    = 0x3FFF
	numericMaxWeight   = 4*math.MaxInt16 + 3
)

// WellFormedPayload reports in one pass over body what ValidatePayload checks in several: it
// is true for one JSON value (RFC 8259, as encoding/json reads it, at most maxPayloadDepth
// deep) that is UTF-8 throughout, has neither a raw NUL nor a \u0000 escape, nor a lone
// surrogate escape, nor a number outside PostgreSQL numeric's range, and false
// otherwise, i.e. exactly when ValidatePayload accepts body (FuzzWellFormedPayload checks both
// directions). It reads a 2 KB delivery about four times faster than the rules one by one,
// and a provider adapter uses it to parse, without a second full validation, a body that
// admission already validated.
func WellFormedPayload(body []byte) bool {
	var stack [maxPayloadDepth / 8]byte // one bit per open container: 1 object, 0 array
	depth := 0
	i := skipSpace(body, 0)
	for {
		// A value starts at i.
		if i >= len(body) {
			return false
		}
		switch c := body[i]; {
		case c == '{' || c == '[':
			if depth == maxPayloadDepth {
				return false
			}
			if c == '{' {
				stack[depth/8] |= 1 << (depth % 8)
			} else {
				stack[depth/8] &^= 1 << (depth % 8)
			}
			depth++
			i = skipSpace(body, i+1)
			if i < len(body) && (body[i] == '}' || body[i] == ']') {
				if (body[i] == '}') != (c == '{') {
					return false
				}
				depth--
				i++
				break // an empty container is a complete value
			}
			if c == '{' {
				if i = objectKey(body, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = stringEnd(body, i); i < 0 {
				return false
			}
		case c == '-' || ('0' <= c && c <= '9'):
			start := i
			if i = numberEnd(body, i); i < 0 || !numberFitsNumeric(body[start:i]) {
				return false
			}
		case c == 't':
			if !bytes.HasPrefix(body[i:], []byte("true")) {
				return false
			}
			i += 4
		case c == 'f':
			if !bytes.HasPrefix(body[i:], []byte("false")) {
				return false
			}
			i += 5
		case c == 'n':
			if !bytes.HasPrefix(body[i:], []byte("null")) {
				return false
			}
			i += 4
		default:
			return false
		}
		// A value ended before i: close containers, or go on to the next element.
		for {
			i = skipSpace(body, i)
			if depth == 0 {
				return i == len(body)
			}
			if i >= len(body) {
				return false
			}
			inObject := stack[(depth-1)/8]&(1<<((depth-1)%8)) != 0
			switch body[i] {
			case ',':
				i = skipSpace(body, i+1)
				if inObject {
					if i = objectKey(body, i); i < 0 {
						return false
					}
				}
			case '}', ']':
				if (body[i] == '}') != inObject {
					return false
				}
				depth--
				i++
				continue
			default:
				return false
			}
			break
		}
	}
}

// maxPayloadDepth is encoding/json's nesting limit, a multiple of 8.
const maxPayloadDepth = 10000

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// objectKey reads `"key" :` at i and returns the index of the value after it, or -1.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// stringEnd returns the index after the string that starts at b[i], or -1 when it is not a
// well-formed string of UTF-8 without NUL (raw or \u0000).
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		// Eight plain bytes at a time: most of a payload is string content.
		for i+8 <= len(b) && plainASCII8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				v, ok := hex4(b, i+2)
				if !ok || v == 0 {
					return -1
				}
				i += 6
				switch {
				case 0xDC00 <= v && v <= 0xDFFF:
					return -1 // a low surrogate without a high one before it
				case 0xD800 <= v && v <= 0xDBFF:
					// jsonb needs the low half at once: \uD83D\uDE00, nothing between.
					if i+2 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
						return -1
					}
					if lo, ok := hex4(b, i+2); !ok || lo < 0xDC00 || lo > 0xDFFF {
						return -1
					}
					i += 6
				}
			default:
				return -1
			}
		case c < 0x20: // control characters, NUL among them, must be escaped
			return -1
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			i += size
		}
	}
	return -1
}

// plainASCII8 reports whether none of the eight bytes of x ends, escapes or breaks a JSON
// string: no '"', no '\\', no control character and nothing of 0x80 or above.
func plainASCII8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	below20 := (x - 0x20*ones) & ^x & highs // a byte < 0x20 (exact while no byte has its high bit)
	return (x&highs)|below20|hasZero(x^('"'*ones))|hasZero(x^('\\'*ones)) == 0
}

// hex4 reads the four hex digits of a \u escape at b[i:i+4].
func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v uint16
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint16(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint16(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | uint16(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// numberFitsNumeric reports whether the well-formed JSON number n fits PostgreSQL's numeric.
// Short plain numbers (most of them) always fit and are decided on their length alone.
func numberFitsNumeric(n []byte) bool {
	if len(n) <= numericMaxScale && !bytes.ContainsAny(n, "eE") {
		return true
	}
	if n[0] == '-' {
		n = n[1:]
	}
	mant, expText := n, []byte(nil)
	if k := bytes.IndexAny(n, "eE"); k >= 0 {
		mant, expText = n[:k], n[k+1:]
	}
	neg := false
	if len(expText) > 0 && (expText[0] == '+' || expText[0] == '-') {
		neg = expText[0] == '-'
		expText = expText[1:]
	}
	var exp int64
	for _, c := range expText {
		if exp = exp*10 + int64(c-'0'); exp >= numericMaxExponent {
			return false // saturate: PostgreSQL refuses such an exponent whatever the digits
		}
	}
	if neg {
		exp = -exp
	}
	whole, frac := mant, []byte(nil)
	if k := bytes.IndexByte(mant, '.'); k >= 0 {
		whole, frac = mant[:k], mant[k+1:]
	}
	if int64(len(frac))-exp > numericMaxScale {
		return false
	}
	// The first significant digit decides the weight; a zero has none and always fits here.
	for k, c := range whole {
		if c != '0' {
			return int64(len(whole)-k-1)+exp <= numericMaxWeight
		}
	}
	for k, c := range frac {
		if c != '0' {
			return int64(-k-1)+exp <= numericMaxWeight
		}
	}
	return true
}

// numberEnd returns the index after the JSON number that starts at b[i], or -1.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
