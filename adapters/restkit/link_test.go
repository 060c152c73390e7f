package restkit_test

import (
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
)

func TestNextLink(t *testing.T) {
	cases := []struct {
		header, want string
		ok           bool
	}{
		{`<https://api.example/r?page=2>; rel="next", <https://api.example/r?page=9>; rel="last"`, "https://api.example/r?page=2", true},
		{`<https://api.example/r?page=1>; rel="prev", <https://api.example/r?page=3>; rel="next"`, "https://api.example/r?page=3", true},
		{`<https://api.example/r?cursor=abc>; rel="next last"`, "https://api.example/r?cursor=abc", true},
		{`<https://api.example/r?page=2>; REL=NEXT`, "https://api.example/r?page=2", true},
		{`<https://api.example/r?page=9>; rel="last"`, "", false},
		{`<https://api.example/r?page=2; rel="next"`, "", false},
		{`https://api.example/r?page=2; rel="next"`, "", false},
		{`<https://api.example/r?page=2>; title="next"`, "", false},
		{``, "", false},
		{`<0?cursor=0>rel=neXt`, "", false},
		{`<https://api.example/r?page=1>, <https://api.example/r?page=2>; rel=next`, "https://api.example/r?page=2", true},
	}
	for _, c := range cases {
		got, ok := restkit.NextLink(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("NextLink(%q) = %q, %v; want %q, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

func FuzzNextLink(f *testing.F) {
	f.Add(`<https://api.example/r?page=2>; rel="next", <https://api.example/r?page=9>; rel="last"`)
	f.Add(`<https://gitlab.example/api/v4/projects?id_after=42&pagination=keyset>; rel="next"`)
	f.Add(`<0?cursor=0>rel=neXt`)
	f.Fuzz(func(t *testing.T, header string) {
		target, ok := restkit.NextLink(header)
		if !ok {
			if target != "" {
				t.Fatalf("no link but a target %q", target)
			}
			return
		}
		if strings.ContainsRune(target, '>') || !strings.Contains(header, "<"+target+">") {
			t.Fatalf("target %q is not a <target> of %q", target, header)
		}
		if !strings.Contains(strings.ToLower(header), "next") || !strings.Contains(header, ";") {
			t.Fatalf("a next link in %q without a rel parameter", header)
		}
	})
}
