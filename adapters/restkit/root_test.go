package restkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
)

func TestParseRoot(t *testing.T) {
	cases := []struct {
		raw, want string
		err       error
	}{
		{"https://api.github.com", "https://api.github.com", nil},
		{"https://gitlab.example/api/v4/", "https://gitlab.example/api/v4", nil},
		{"http://127.0.0.1:8080/api", "http://127.0.0.1:8080/api", nil},
		{"", "", restkit.ErrMissing},
		{"  ", "", restkit.ErrMissing},
		{"gitlab.example/api/v4", "", restkit.ErrNotAbsolute},
		{"ftp://files.example", "", restkit.ErrNotAbsolute},
		{"https://", "", restkit.ErrNotAbsolute},
		{"https://user:pw@api.example", "", restkit.ErrNotARoot},
		{"https://api.example/api?x=1", "", restkit.ErrNotARoot},
		{"https://api.example/api?", "", restkit.ErrNotARoot},
		{"https://api.example/api#top", "", restkit.ErrNotARoot},
	}
	for _, c := range cases {
		u, err := restkit.ParseRoot(c.raw)
		if !errors.Is(err, c.err) {
			t.Errorf("ParseRoot(%q) error %v, want %v", c.raw, err, c.err)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("ParseRoot(%q) echoes the value: %v", c.raw, err)
			}
			continue
		}
		if u.String() != c.want {
			t.Errorf("ParseRoot(%q) = %q, want %q", c.raw, u, c.want)
		}
	}
}

func TestReadAtMost(t *testing.T) {
	for _, c := range []struct {
		body     string
		max      int64
		tooLarge bool
	}{{"12345", 5, false}, {"123456", 5, true}, {"", 5, false}, {"1", 0, true}} {
		got, tooLarge, err := restkit.ReadAtMost(strings.NewReader(c.body), c.max)
		if err != nil || tooLarge != c.tooLarge || (!tooLarge && string(got) != c.body) {
			t.Errorf("ReadAtMost(%q, %d) = %q, %v, %v", c.body, c.max, got, tooLarge, err)
		}
	}
}
