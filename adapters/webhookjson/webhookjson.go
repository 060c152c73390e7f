// Package webhookjson holds what the provider webhook adapters (adapters/<provider>/webhook.go,
// parse.go) share besides their signature schemes: the tolerant JSON reading of a
// body (a verified body can still have any JSON shape, and parsing must never panic on one),
// the header keeping, the bounds of event types and delivery keys, and the clock and window of
// a signed timestamp and the connection secret of a per-connection delivery (verify.go), and the
// refusals every parser shares: a body that is no JSON object, a missing or unusable event type
// or delivery key, a subject that cannot be made (delivery.go).
package webhookjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Object is a decoded JSON object. Every accessor tolerates a missing key or a value of the
// wrong type, because a verified body can still have any JSON shape and parsing must never
// panic on one.
type Object map[string]any

// Decode reads body as one JSON object (numbers kept as json.Number).
func Decode(body []byte) (Object, error) {
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
	return Object(m), nil
}

// Object returns the member key when it is an object.
func (o Object) Object(key string) (Object, bool) {
	m, ok := o[key].(map[string]any)
	return Object(m), ok
}

// Str returns the member key when it is a string.
func (o Object) Str(key string) (string, bool) {
	s, ok := o[key].(string)
	return s, ok
}

// MaxEventTypeBytes and MaxDeliveryBytes are the inbox's bounds (inbox.NewDelivery) of an event
// type and of a delivery key.
const (
	MaxEventTypeBytes = 100
	MaxDeliveryBytes  = 200
)

// ValidEventType accepts an event type, action or subtype: ValidToken of at most
// MaxEventTypeBytes.
func ValidEventType(s string) bool { return ValidToken(s, MaxEventTypeBytes) }

// ValidDeliveryID accepts a delivery key: ValidToken of at most MaxDeliveryBytes.
func ValidDeliveryID(s string) bool { return ValidToken(s, MaxDeliveryBytes) }

// ValidToken accepts a provider token (event type, delivery id) that can be stored and logged:
// printable ASCII, no control characters, at most max bytes.
func ValidToken(s string, max int) bool {
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

// KeptHeaders copies the named headers that are present. The list never names a signature,
// token or cookie header, so nothing here can leak a credential into storage.
func KeptHeaders(h http.Header, names []string) map[string]string {
	kept := make(map[string]string, len(names))
	for _, name := range names {
		if v := strings.Join(h.Values(name), ", "); v != "" {
			kept[name] = v
		}
	}
	return kept
}

// ValidID accepts a provider id (a Slack "C024BE91L", an Outline UUID or url id) as something that
// can be a subject part and a subscription id: 1 to 64 letters, digits, '.', '_' or '-'.
func ValidID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// PositiveID reads a positive integer id written as a JSON number (integral, possibly in float
// notation) or a decimal string, and returns it in canonical decimal form.
func PositiveID(v any) (string, bool) {
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
