package webhookjson_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/ports"
)

func TestCheckFresh(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	fixed := webhookjson.Clock(func() time.Time { return now })
	cases := []struct {
		clock  webhookjson.Clock
		signed time.Time
		fresh  bool
	}{
		{fixed, now, true},
		{fixed, now.Add(-5 * time.Minute), true},
		{fixed, now.Add(5 * time.Minute), true},
		{fixed, now.Add(-5*time.Minute - time.Second), false},
		{fixed, now.Add(5*time.Minute + time.Second), false},
		// The zero Clock is time.Now.
		{nil, time.Now(), true},
		{nil, time.Now().Add(-time.Hour), false},
	}
	for i, c := range cases {
		err := c.clock.CheckFresh(c.signed)
		if c.fresh != (err == nil) {
			t.Fatalf("case %d: fresh %v, error %v", i, c.fresh, err)
		}
		var rej *ports.RejectedError
		if err != nil && (!errors.As(err, &rej) || rej.Reason != "stale-timestamp" || !errors.Is(err, ports.ErrUnauthenticated)) {
			t.Fatalf("case %d: not an unauthenticated stale-timestamp refusal: %v", i, err)
		}
	}
}
