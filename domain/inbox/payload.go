package inbox

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Reasons of a PayloadError, as the receiver answers and counts them.
const (
	PayloadNotUTF8 = "invalid-utf8"
	PayloadNotJSON = "invalid-json"
	PayloadNUL     = "nul"
)

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
