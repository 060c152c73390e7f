package inbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// Reasons of a PayloadError, as the receiver answers and counts them.
const (
	PayloadNotUTF8 = "invalid-utf8"
	PayloadNotJSON = "invalid-json"
	PayloadNUL     = "nul"
)

// PayloadReasons lists the reasons of a PayloadError (webhook_rejected_total{reason}).
func PayloadReasons() []string { return []string{PayloadNotUTF8, PayloadNotJSON, PayloadNUL} }

// PayloadError names the rule a body broke. It matches ErrInvalidPayload with errors.Is, so
// callers that only need "invalid or not" keep testing the sentinel.
type PayloadError struct {
	Reason string // PayloadNotUTF8, PayloadNotJSON or PayloadNUL
	detail string
}

func (e *PayloadError) Error() string { return ErrInvalidPayload.Error() + ": " + e.detail }
func (e *PayloadError) Unwrap() error { return ErrInvalidPayload }

// ValidatePayload requires UTF-8 JSON without a raw NUL byte and without a \u0000 escape, so
// that every stored payload can be read as PostgreSQL text (person erasure reads it so).
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
	}
	return nil
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

// WellFormedPayload reports in one pass over body what ValidatePayload checks in several: it
// is true for one JSON value (RFC 8259, as encoding/json reads it, at most maxPayloadDepth
// deep) that is UTF-8 throughout and has neither a raw NUL nor a \u0000 escape, and false
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
			if i = numberEnd(body, i); i < 0 {
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
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) ||
					string(b[i+2:i+6]) == "0000" {
					return -1
				}
				i += 6
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

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
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
