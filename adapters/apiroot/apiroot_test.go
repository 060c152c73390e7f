package apiroot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/apiroot"
)

func TestParse(t *testing.T) {
	cases := []struct {
		raw, want string
		err       error
	}{
		{"https://api.github.com", "https://api.github.com", nil},
		{"https://gitlab.example/api/v4/", "https://gitlab.example/api/v4", nil},
		{"http://127.0.0.1:8080/api", "http://127.0.0.1:8080/api", nil},
		{"", "", apiroot.ErrMissing},
		{"  ", "", apiroot.ErrMissing},
		{"gitlab.example/api/v4", "", apiroot.ErrNotAbsolute},
		{"ftp://files.example", "", apiroot.ErrNotAbsolute},
		{"https://", "", apiroot.ErrNotAbsolute},
		{"https://user:pw@api.example", "", apiroot.ErrNotARoot},
		{"https://api.example/api?x=1", "", apiroot.ErrNotARoot},
		{"https://api.example/api?", "", apiroot.ErrNotARoot},
		{"https://api.example/api#top", "", apiroot.ErrNotARoot},
	}
	for _, c := range cases {
		u, err := apiroot.Parse(c.raw)
		if !errors.Is(err, c.err) {
			t.Errorf("Parse(%q) error %v, want %v", c.raw, err, c.err)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("Parse(%q) echoes the value: %v", c.raw, err)
			}
			continue
		}
		if u.String() != c.want {
			t.Errorf("Parse(%q) = %q, want %q", c.raw, u, c.want)
		}
	}
}
