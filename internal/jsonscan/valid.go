// Package jsonscan reads JSON text without decoding it: Rules.Valid checks a value in one pass
// (the grammar, UTF-8 and whatever stricter rules the caller asks for), and Object reads the
// members of an object as raw text, so a caller that needs a few members of a large body
// decodes only those.
//
// It knows JSON and nothing else: which rules a body must meet is its caller's business (the
// inbox's payload rule, domain/inbox), and so is what the members mean (a provider's parser).
// It imports only the standard library, which is why domain/ may use it (ARCHITECTURE.md, the layers). Its
// fuzz targets compare both halves with encoding/json.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// MaxDepth is encoding/json's nesting limit (a multiple of 8): Valid refuses deeper values, as
// json.Valid does.
const MaxDepth = 10000

// Rules are what Valid requires of a value beyond RFC 8259. The zero value requires nothing
// more.
type Rules struct {
	// NoEscapedNUL refuses a \u0000 escape (a raw NUL is a control character, never valid).
	NoEscapedNUL bool
	// PairedSurrogates refuses a \u escape of a UTF-16 surrogate that is not one half of a
	// pair: a high one (D800–DBFF) not at once followed by the escape of a low one (DC00–DFFF),
	// or a low one without a high one before it.
	PairedSurrogates bool
	// Number, when set, is asked about every number (its text, well-formed); false refuses
	// the value.
	Number func(n []byte) bool
}

// Valid reports whether body is exactly one JSON value (RFC 8259, as encoding/json reads it:
// at most MaxDepth deep, whitespace around it allowed) that is UTF-8 throughout and meets r.
// Unlike json.Valid it refuses a string with bytes that are not UTF-8 (RFC 8259 §8.1 requires
// UTF-8; encoding/json would replace them with U+FFFD).
func (r Rules) Valid(body []byte) bool {
	var stack [MaxDepth / 8]byte // one bit per open container: 1 object, 0 array
	depth := 0
	i := skipSpace(body, 0)
	for {
		// A value starts at i.
		if i >= len(body) {
			return false
		}
		switch c := body[i]; {
		case c == '{' || c == '[':
			if depth == MaxDepth {
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
				if i = r.objectKey(body, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = r.stringEnd(body, i); i < 0 {
				return false
			}
		case c == '-' || ('0' <= c && c <= '9'):
			start := i
			if i = numberEnd(body, i); i < 0 || (r.Number != nil && !r.Number(body[start:i])) {
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
					if i = r.objectKey(body, i); i < 0 {
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

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// objectKey reads `"key" :` at i and returns the index of the value after it, or -1.
func (r Rules) objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = r.stringEnd(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// stringEnd returns the index after the string that starts at b[i], or -1 when it is not a
// well-formed string of UTF-8 that meets r.
func (r Rules) stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		// Eight plain bytes at a time: most of a body is string content.
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
				if !ok || (v == 0 && r.NoEscapedNUL) {
					return -1
				}
				i += 6
				if !r.PairedSurrogates {
					break
				}
				switch {
				case 0xDC00 <= v && v <= 0xDFFF:
					return -1 // a low surrogate without a high one before it
				case 0xD800 <= v && v <= 0xDBFF:
					// The low half must follow at once: \uD83D\uDE00, nothing between.
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
			ru, size := utf8.DecodeRune(b[i:])
			if ru == utf8.RuneError && size == 1 {
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
