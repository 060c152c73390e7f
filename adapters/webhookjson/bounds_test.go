package webhookjson_test

import (
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
)

// The bounds are the inbox's (inbox.NewDelivery): a longer event type or delivery key, or one
// that cannot be stored and logged, is refused before a delivery is made of it.
func TestTokenBounds(t *testing.T) {
	cases := []struct {
		valid func(string) bool
		token string
		want  bool
	}{
		{webhookjson.ValidEventType, strings.Repeat("e", 100), true},
		{webhookjson.ValidEventType, strings.Repeat("e", 101), false},
		{webhookjson.ValidEventType, "", false},
		{webhookjson.ValidEventType, "push\n", false},
		{webhookjson.ValidDeliveryID, strings.Repeat("d", 200), true},
		{webhookjson.ValidDeliveryID, strings.Repeat("d", 201), false},
		{webhookjson.ValidDeliveryID, "", false},
		{webhookjson.ValidDeliveryID, "é", false},
	}
	for i, c := range cases {
		if got := c.valid(c.token); got != c.want {
			t.Fatalf("case %d (%d bytes): got %v, want %v", i, len(c.token), got, c.want)
		}
	}
}
