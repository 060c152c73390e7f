package change_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hephaestus-dev/hephaestus/domain/change"
)

func TestWithVersionAddsTheVersionToTheData(t *testing.T) {
	typ := change.MustType("github.issue.upserted")
	for _, data := range []any{map[string]int{"id": 7}, map[string]int{}, struct{}{}} {
		c, err := change.NewVersioned(typ, "github:issue:7", "2026-01-02T03:04:05.000000Z/0000000000000000009", data)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(c.Data(), &got); err != nil {
			t.Fatalf("%s: %v", c.Data(), err)
		}
		if got["version"] != "2026-01-02T03:04:05.000000Z/0000000000000000009" {
			t.Errorf("%s: no version", c.Data())
		}
		if m, ok := data.(map[string]int); ok && len(m) > 0 && got["id"] != float64(7) {
			t.Errorf("%s: the entity's members are lost", c.Data())
		}
	}
	for _, bad := range []string{"", `a"b`, `a\b`} {
		if _, err := change.NewVersioned(typ, "s", bad, map[string]int{}); !errors.Is(err, change.ErrInvalidChange) {
			t.Errorf("version %q: %v", bad, err)
		}
	}
	if _, err := change.NewVersioned(typ, "s", "1", map[string]string{"version": "0"}); !errors.Is(err, change.ErrInvalidChange) {
		t.Errorf("a second version: %v", err)
	}
}
