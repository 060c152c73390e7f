package linkheader_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/linkheader"
)

func TestNext(t *testing.T) {
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
	}
	for _, c := range cases {
		got, ok := linkheader.Next(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("Next(%q) = %q, %v; want %q, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}
