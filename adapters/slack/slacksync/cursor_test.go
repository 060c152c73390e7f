package slacksync

import (
	"reflect"
	"testing"
)

// The job cursor round-trips, and the cursors stored before threads were backfilled
// ("history:<cursor>") still read as history positions.
func TestCursor(t *testing.T) {
	for _, c := range []struct {
		cursor string
		want   position
	}{
		{"", position{}},
		{"history:", position{}},
		{"history:bmV4dF90czo", position{history: "bmV4dF90czo"}},
		{"replies:1700000001.000100|cmVw|history:bmV4dA==", position{history: "bmV4dA==", threads: []string{"1700000001.000100"}, replies: "cmVw"}},
		{"replies:1700000002.000100,1700000001.000100||history:done",
			position{historyDone: true, threads: []string{"1700000002.000100", "1700000001.000100"}}},
	} {
		got, err := parseCursor(c.cursor)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseCursor(%q) = %+v, %v; want %+v", c.cursor, got, err, c.want)
		}
		if c.cursor != "" && c.cursor != "history:" && got.String() != c.cursor {
			t.Errorf("position of %q is written %q", c.cursor, got.String())
		}
	}
	for _, bad := range []string{"history:done", "page:1", "replies:", "replies:|x|history:done", "replies:1.1|x|page:2", "replies:1.1,|x|history:"} {
		if _, err := parseCursor(bad); err == nil {
			t.Errorf("parseCursor(%q) accepted a cursor that is not one", bad)
		}
	}
	// After the last replies page of the last thread of the last history page, the job is done.
	p := position{historyDone: true, threads: []string{"1700000001.000100"}}
	if next := p.nextThread(); !next.finished() || next.String() != "history:done" {
		t.Errorf("after the last thread: %+v %q", next, next.String())
	}
}
