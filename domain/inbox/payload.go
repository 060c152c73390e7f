package inbox

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/internal/jsonscan"
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

// Error says why the payload was refused.
func (e *PayloadError) Error() string { return ErrInvalidPayload.Error() + ": " + e.detail }

// Unwrap is ErrInvalidPayload.
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
	case !(jsonscan.Rules{NoEscapedNUL: true}).Valid(body):
		return &PayloadError{Reason: PayloadNUL, detail: `escaped NUL (\u0000)`}
	case !(jsonscan.Rules{PairedSurrogates: true}).Valid(body):
		return &PayloadError{Reason: PayloadEscape, detail: "lone surrogate escape"}
	case !(jsonscan.Rules{Number: numberFitsNumeric}).Valid(body):
		return &PayloadError{Reason: PayloadNumberRange, detail: "number outside PostgreSQL numeric's range"}
	}
	// Each rule alone accepts, yet not all together: no such body exists (FuzzValid in
	// internal/jsonscan checks each rule alone and all together), but never store what the
	// one-pass check did not accept.
	return &PayloadError{Reason: PayloadNotJSON, detail: "not JSON"}
}

// payloadRules is the payload rule as internal/jsonscan checks it in one pass: beyond JSON in
// UTF-8 (which also excludes a raw NUL), no \u0000 escape, no lone surrogate escape, and
// numbers that fit PostgreSQL's numeric.
var payloadRules = jsonscan.Rules{NoEscapedNUL: true, PairedSurrogates: true, Number: numberFitsNumeric}

// WellFormedPayload reports in one pass over body what ValidatePayload checks rule by rule, so
// it is true exactly when ValidatePayload accepts body. A provider adapter may use it to parse,
// without a second full validation, a body that admission already validated.
func WellFormedPayload(body []byte) bool { return payloadRules.Valid(body) }

// PostgreSQL numeric's limits (src/backend/utils/adt/numeric.c): the exponent of the input,
// the digits kept after the point (NUMERIC_DSCALE_MAX) and the decimal weight of the first
// digit (NUMERIC_WEIGHT_MAX base-10000 digits, i.e. below 10^131072).
const (
	numericMaxExponent = math.MaxInt32 / 2
	numericMaxScale    = 0x3FFF
	numericMaxWeight   = 4*math.MaxInt16 + 3
)

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
