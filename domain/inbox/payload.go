package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// ValidatePayload requires UTF-8 JSON without a raw NUL byte and without a \u0000 escape, so
// that every stored payload can be read as PostgreSQL text (person erasure reads it so).
func ValidatePayload(body []byte) error {
	switch {
	case len(body) == 0:
		return fmt.Errorf("%w: empty body", ErrInvalidPayload)
	case !utf8.Valid(body):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidPayload)
	case bytes.IndexByte(body, 0) >= 0:
		return fmt.Errorf("%w: raw NUL byte", ErrInvalidPayload)
	case !json.Valid(body):
		return fmt.Errorf("%w: not JSON", ErrInvalidPayload)
	case hasEscapedNUL(body):
		return fmt.Errorf("%w: escaped NUL (\\u0000)", ErrInvalidPayload)
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
