package github

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// object is a decoded JSON object (a connection's config). Numbers stay json.Number so that
// large ids keep every digit; every accessor tolerates a missing key or a value of the wrong
// type, because a verified body can still have any JSON shape and parsing must never panic on
// one. A delivery's body is read through jsonObject, which answers the same without decoding it.
type object map[string]any

// present reports whether key is set to something other than null.
func (o object) present(key string) bool {
	v, ok := o[key]
	return ok && v != nil
}

func (o object) object(key string) (object, bool) {
	m, ok := o[key].(map[string]any)
	return object(m), ok
}

func (o object) str(key string) (string, bool) {
	s, ok := o[key].(string)
	return s, ok
}

func (o object) array(key string) bool {
	_, ok := o[key].([]any)
	return ok
}

// idOf reads a positive integer id (webhookjson.PositiveID).
func idOf(v any) (string, bool) { return webhookjson.PositiveID(v) }

// nestedID reads o[key].id: absent when o[key] is missing or null, invalid when it is there but
// is not an object with a positive integer id.
func (o object) nestedID(key string) (id string, present bool, valid bool) {
	if !o.present(key) {
		return "", false, false
	}
	inner, ok := o.object(key)
	if !ok {
		return "", true, false
	}
	id, ok = idOf(inner["id"])
	return id, true, ok
}

func validToken(s string, max int) bool { return webhookjson.ValidToken(s, max) }

// headerName is a header as GitHub names it and as net/http keys it, so that reading it does
// not canonicalize the name again for every delivery (http.Header.Get does).
type headerName struct {
	name string // as stored with the row
	key  string // http.CanonicalHeaderKey(name)
}

func newHeaderName(name string) headerName {
	return headerName{name: name, key: http.CanonicalHeaderKey(name)}
}

func headerNames(names ...string) []headerName {
	hs := make([]headerName, len(names))
	for i, name := range names {
		hs[i] = newHeaderName(name)
	}
	return hs
}

// get is h.Get(n.name).
func (n headerName) get(h http.Header) string {
	if v := h[n.key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// keptHeaders copies the named headers that are present. The list never names a signature,
// token or cookie header, so nothing here can leak a credential into storage.
func keptHeaders(h http.Header, names []headerName) map[string]string {
	kept := make(map[string]string, len(names))
	for _, n := range names {
		if v := strings.Join(h[n.key], ", "); v != "" {
			kept[n.name] = v
		}
	}
	return kept
}

// jsonObject is a JSON object left as raw text. A delivery is read for a few members of a
// body that can be large (an issue's text, a repository's every field), so nothing else is
// decoded or allocated: decoding the whole body into maps was most of the receiver's parsing
// time. A lookup sees the last member of a repeated name, as decoding into a map does, and
// every accessor answers exactly what the same read of the decoded value would (object, str,
// present, array, idOf), so the rules read the same either way.
type jsonObject struct {
	raw     []byte   // the object's well-formed text, from '{' to '}'
	members []member // its members, when indexed (the body's top level); else found by a walk
}

type member struct {
	name  []byte // unescaped
	value []byte // raw JSON, without surrounding whitespace
}

// decodeBody reads body, which must be one JSON object (a top-level value of any other type
// is not a delivery), and indexes its members.
func decodeBody(body []byte) (jsonObject, error) {
	// Well-formed first: the walk below relies on it, and it refuses trailing values after the
	// first one, which a decoder would not. A body that admission accepted passes inbox's
	// one-pass check (true exactly for what inbox.ValidatePayload accepts); any other body is
	// judged by json.Valid.
	if !inbox.WellFormedPayload(body) && !json.Valid(body) {
		return jsonObject{}, errors.New("body is not JSON")
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return jsonObject{}, errors.New("body is not a JSON object")
	}
	o := jsonObject{raw: body[i:], members: make([]member, 0, 16)}
	o.walk(func(name, value []byte) {
		o.members = append(o.members, member{name: name, value: value})
	})
	return o, nil
}

// walk calls fn with each member in order.
func (o jsonObject) walk(fn func(name, value []byte)) {
	b := o.raw
	i := skipSpace(b, 1)
	if b[i] == '}' {
		return
	}
	for {
		end := stringEnd(b, i)
		name := b[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			_ = json.Unmarshal(b[i:end], &s) // well-formed: cannot fail
			name = []byte(s)
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		end = valueEnd(b, i)
		fn(name, b[i:end])
		i = skipSpace(b, end)
		if b[i] != ',' {
			return // '}'
		}
		i = skipSpace(b, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the closing quote of the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasByte := func(x uint64, c byte) bool { x ^= uint64(c) * ones; return (x-ones)&^x&highs != 0 }
	for i++; ; i++ {
		// Eight bytes at a time while none of them is a quote or a backslash.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if hasByte(x, '"') || hasByte(x, '\\') {
				break
			}
			i += 8
		}
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index after the well-formed value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// get returns the raw value of the last member named key.
func (o jsonObject) get(key string) (value []byte, found bool) {
	if o.members != nil {
		for i := len(o.members) - 1; i >= 0; i-- {
			if string(o.members[i].name) == key {
				return o.members[i].value, true
			}
		}
		return nil, false
	}
	if o.raw == nil {
		return nil, false
	}
	o.walk(func(name, v []byte) {
		if string(name) == key {
			value, found = v, true
		}
	})
	return value, found
}

// present reports whether key is set to something other than null.
func (o jsonObject) present(key string) bool {
	v, ok := o.get(key)
	return ok && string(v) != "null"
}

func (o jsonObject) object(key string) (jsonObject, bool) {
	v, ok := o.get(key)
	if !ok || v[0] != '{' {
		return jsonObject{}, false
	}
	return jsonObject{raw: v}, true
}

func (o jsonObject) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	return rawString(v)
}

func (o jsonObject) array(key string) bool {
	v, ok := o.get(key)
	return ok && v[0] == '['
}

// id is idOf of the decoded value of key.
func (o jsonObject) id(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	switch {
	case v[0] == '"':
		s, _ := rawString(v)
		return idOf(s)
	case v[0] == '-' || ('0' <= v[0] && v[0] <= '9'):
		return idOf(json.Number(v))
	}
	return "", false // object, array, true, false, null
}

// nestedID is nestedID of the decoded object.
func (o jsonObject) nestedID(key string) (id string, present bool, valid bool) {
	if !o.present(key) {
		return "", false, false
	}
	inner, ok := o.object(key)
	if !ok {
		return "", true, false
	}
	id, ok = inner.id("id")
	return id, true, ok
}

// rawString decodes a raw JSON string as decoding does (invalid UTF-8 becomes U+FFFD); any
// other value is no string.
func rawString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	if s := v[1 : len(v)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}
