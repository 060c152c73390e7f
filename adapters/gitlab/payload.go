package gitlab

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
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

func (o object) object(key string) (object, bool) {
	m, ok := o[key].(map[string]any)
	return object(m), ok
}

// idOf reads a positive integer id (webhookjson.PositiveID).
func idOf(v any) (string, bool) { return webhookjson.PositiveID(v) }

func validToken(s string, max int) bool { return webhookjson.ValidToken(s, max) }

func keptHeaders(h http.Header, names []string) map[string]string {
	return webhookjson.KeptHeaders(h, names)
}
