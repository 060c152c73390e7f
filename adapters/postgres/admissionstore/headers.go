package admissionstore

// Why this file: every admitted row stores the provider's kept headers as jsonb, and
// encoding/json would reflect over the map for every row; this writes the same JSON value
// directly (FuzzHeadersJSON compares it with encoding/json).

import (
	"slices"
	"unicode/utf8"
)

// headersJSON is the stored headers as a JSON object, keys in order. It writes what
// json.Marshal would store (jsonb keeps only the decoded strings): JSON escapes, and U+FFFD for
// bytes that are not UTF-8, without reflection on every delivery.
func headersJSON(h map[string]string) []byte {
	size := 2
	for k, v := range h {
		size += len(k) + len(v) + 6
	}
	return appendHeadersJSON(make([]byte, 0, size), h)
}

// appendHeadersJSON appends headersJSON(h) to b.
func appendHeadersJSON(b []byte, h map[string]string) []byte {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, h[k])
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
