package github

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// object is a decoded JSON object. Numbers stay json.Number so that large ids keep every digit;
// every accessor tolerates a missing key or a value of the wrong type, because a verified body
// can still have any JSON shape and parsing must never panic on one.
type object map[string]any

func decodeObject(body []byte) (object, error) {
	// json.Valid first: the decoder alone would accept trailing values after the first one.
	if !json.Valid(body) {
		return nil, errors.New("body is not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("body is not a JSON object")
	}
	return object(m), nil
}

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

// idOf reads a positive integer id written as a JSON number (integral, possibly in float
// notation) or a decimal string, and returns it in canonical decimal form.
func idOf(v any) (string, bool) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = n.String()
	case string:
		s = n
	case float64:
		return floatID(n)
	case int:
		return intID(int64(n))
	case int64:
		return intID(n)
	case int32:
		return intID(int64(n))
	default:
		return "", false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intID(i)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", false
	}
	return floatID(f)
}

func intID(i int64) (string, bool) {
	if i <= 0 {
		return "", false
	}
	return strconv.FormatInt(i, 10), true
}

// floatID accepts only integral values a float64 represents exactly.
func floatID(f float64) (string, bool) {
	if f != math.Trunc(f) || f < 1 || f > 1<<53 {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}

// nestedID reads o[key].id: absent when o[key] is missing or null, invalid when it is there but
// is not an object with a positive integer id.
func nestedID(o object, key string) (id string, present bool, valid bool) {
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

// validToken accepts a provider token (event type, delivery id) that can be stored and logged:
// printable ASCII, no control characters, at most max bytes.
func validToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// keptHeaders copies the named headers that are present. The list never names a signature,
// token or cookie header, so nothing here can leak a credential into storage.
func keptHeaders(h http.Header, names []string) map[string]string {
	kept := make(map[string]string, len(names))
	for _, name := range names {
		if v := strings.Join(h.Values(name), ", "); v != "" {
			kept[name] = v
		}
	}
	return kept
}
