package github

import (
	"net/http"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/internal/jsonscan"
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

// jsonObject is a delivery's body, or an object inside it, read member by member as raw text
// (jsonscan.Object): a delivery is read for a few members of a body that can be large (an
// issue's text, a repository's every field), so nothing else is decoded. Every accessor
// answers exactly what the same read of the decoded value would (object, str, present, array,
// idOf), so the rules read the same either way.
type jsonObject struct{ o jsonscan.Object }

// decodeBody reads body, which must be one JSON object (a top-level value of any other type
// is not a delivery), and indexes its members.
func decodeBody(body []byte) (jsonObject, error) {
	o, err := jsonscan.ParseObject(body)
	return jsonObject{o}, err
}

// present reports whether key is set to something other than null.
func (o jsonObject) present(key string) bool { return o.o.Present(key) }

func (o jsonObject) object(key string) (jsonObject, bool) {
	inner, ok := o.o.Object(key)
	return jsonObject{inner}, ok
}

func (o jsonObject) str(key string) (string, bool) { return o.o.String(key) }

func (o jsonObject) array(key string) bool { return o.o.Array(key) }

// id is idOf of the decoded value of key.
func (o jsonObject) id(key string) (string, bool) {
	if s, ok := o.o.String(key); ok {
		return idOf(s)
	}
	if n, ok := o.o.Number(key); ok {
		return idOf(n)
	}
	return "", false // absent, object, array, true, false, null
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
