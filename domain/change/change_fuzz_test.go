package change_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/domain/change"
)

// FuzzParseCursor: a cursor from a query string or a Last-Event-ID header either is refused
// with ErrInvalidCursor or reads back to exactly the text it came from (no two spellings of
// one cursor, nothing accepted that String would not write).
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0-0", "1-1", "767-12", "18446744073709551615-9223372036854775807", "01-1", "1-", "-1", "a-b", "5--1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := change.ParseCursor(s)
		if err != nil {
			return
		}
		if c.IsZero() {
			if s != "" && s != "0-0" {
				t.Fatalf("%q read as the zero cursor", s)
			}
			return
		}
		if c.String() != s {
			t.Fatalf("%q read back as %q", s, c.String())
		}
	})
}
