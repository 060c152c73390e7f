package change_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/change"
)

func TestParseLimitAndWait(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{{"", 100, false}, {"1", 1, false}, {"100", 100, false}, {"0", 0, true}, {"101", 0, true}, {"x", 0, true}} {
		got, err := change.ParseLimit(tc.in)
		if (err != nil) != tc.err || got != tc.want || (err != nil && !errors.Is(err, change.ErrInvalidLimit)) {
			t.Errorf("ParseLimit(%q) = %d, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{{"", 0, false}, {"30s", 30 * time.Second, false}, {"60", time.Minute, false}, {"1m", time.Minute, false},
		{"61s", 0, true}, {"-1s", 0, true}, {"soon", 0, true}} {
		got, err := change.ParseWait(tc.in)
		if (err != nil) != tc.err || got != tc.want || (err != nil && !errors.Is(err, change.ErrInvalidWait)) {
			t.Errorf("ParseWait(%q) = %s, %v", tc.in, got, err)
		}
	}
}

func TestTypesAndChanges(t *testing.T) {
	for _, ok := range []string{"github.issue.upserted", "slack.message.posted", "connection.state.changed", "connection.state_changed"} {
		if _, err := change.ParseType(ok); err != nil {
			t.Errorf("ParseType(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "github.issue", "GitHub.issue.upserted", "a.b.c.d", "github..upserted", "issue.upserted", "connection.", "Connection.state_changed"} {
		if _, err := change.ParseType(bad); !errors.Is(err, change.ErrInvalidType) {
			t.Errorf("ParseType(%q) accepted", bad)
		}
	}
	typ := change.MustType("github.issue.upserted")
	if _, err := change.New(typ, "", map[string]int{"id": 1}); !errors.Is(err, change.ErrInvalidChange) {
		t.Error("a change without a subject was accepted")
	}
	if _, err := change.New(typ, "github:issue:1", []int{1}); !errors.Is(err, change.ErrInvalidChange) {
		t.Error("data that is not an object was accepted")
	}
}
