package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"
)

// Errors of ParseObject.
var (
	ErrNotJSON   = errors.New("body is not JSON")
	ErrNotObject = errors.New("body is not a JSON object")
)

// Object is a JSON object left as raw text, read for a few members without decoding the rest
// (a body can be large, and decoding all of it into maps costs more than reading the members
// a caller needs). A lookup sees the last member of a repeated name, as decoding into a map
// does, and every accessor answers what the same read of the value decoded by encoding/json
// (with UseNumber) would answer (FuzzMembers checks it).
type Object struct {
	raw     []byte   // the object's well-formed text, from '{' to '}'
	members []member // its members, when indexed (ParseObject's top level); else found by a walk
}

type member struct {
	name  []byte // unescaped
	value []byte // raw JSON, without surrounding whitespace
	text  []byte // the whole member as written, from the name's quote to the value's end
}

// ParseObject reads body, which must be one JSON value and an object, and indexes its
// members. Errors: ErrNotJSON (also for a second value after the first), ErrNotObject.
func ParseObject(body []byte) (Object, error) {
	// Well-formed first: the walk relies on it. A UTF-8 body takes the one pass; only one with
	// other bytes (which encoding/json reads as U+FFFD) needs encoding/json's own check.
	if !(Rules{}).Valid(body) && !json.Valid(body) {
		return Object{}, ErrNotJSON
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return Object{}, ErrNotObject
	}
	o := Object{raw: body[i:], members: make([]member, 0, 16)}
	o.walk(func(name, value, text []byte) {
		o.members = append(o.members, member{name: name, value: value, text: text})
	})
	return o, nil
}

// walk calls fn with each member in order: its unescaped name, its raw value and the member's
// whole text.
func (o Object) walk(fn func(name, value, text []byte)) {
	b := o.raw
	i := skipSpace(b, 1)
	if b[i] == '}' {
		return
	}
	for {
		start := i
		end := rawStringEnd(b, i)
		name := b[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
			var s string
			_ = json.Unmarshal(b[i:end], &s) // well-formed: cannot fail
			name = []byte(s)
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		end = valueEnd(b, i)
		fn(name, b[i:end], b[start:end])
		i = skipSpace(b, end)
		if b[i] != ',' {
			return // '}'
		}
		i = skipSpace(b, i+1)
	}
}

// rawStringEnd returns the index after the closing quote of the well-formed string that
// starts at b[i].
func rawStringEnd(b []byte, i int) int {
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
		return rawStringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = rawStringEnd(b, i) - 1
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

// Get returns the raw value of the last member named key.
func (o Object) Get(key string) (value []byte, found bool) {
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
	o.walk(func(name, v, _ []byte) {
		if string(name) == key {
			value, found = v, true
		}
	})
	return value, found
}

// Without returns the object's text without any of its members named one of names (every
// member of a repeated name, however its name is escaped), and whether it removed one. The
// members it keeps are copied as written, in order, so the result decodes to what the object
// decodes to less those names (FuzzWithout checks it). It reads the members ParseObject indexed;
// an Object that Object returned answers its text unchanged.
func (o Object) Without(names ...string) ([]byte, bool) {
	removed := false
	for _, m := range o.members {
		if slices.Contains(names, string(m.name)) {
			removed = true
			break
		}
	}
	if !removed {
		return o.raw, false
	}
	out := make([]byte, 0, len(o.raw))
	out = append(out, '{')
	for _, m := range o.members {
		if slices.Contains(names, string(m.name)) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, m.text...)
	}
	return append(out, '}'), true
}

// Present reports whether key is set to something other than null.
func (o Object) Present(key string) bool {
	v, ok := o.Get(key)
	return ok && string(v) != "null"
}

// Object returns the member key when it is an object.
func (o Object) Object(key string) (Object, bool) {
	v, ok := o.Get(key)
	if !ok || v[0] != '{' {
		return Object{}, false
	}
	return Object{raw: v}, true
}

// String returns the member key decoded when it is a string.
func (o Object) String(key string) (string, bool) {
	v, ok := o.Get(key)
	if !ok {
		return "", false
	}
	return rawString(v)
}

// Number returns the member key's text when it is a number.
func (o Object) Number(key string) (json.Number, bool) {
	v, ok := o.Get(key)
	if !ok || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return "", false
	}
	return json.Number(v), true
}

// Array reports whether the member key is an array.
func (o Object) Array(key string) bool {
	v, ok := o.Get(key)
	return ok && v[0] == '['
}

// rawString decodes a raw JSON string as encoding/json does (invalid UTF-8 becomes U+FFFD);
// any other value is no string.
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
