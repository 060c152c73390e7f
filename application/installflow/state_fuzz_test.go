package installflow

import (
	"bytes"
	"testing"
	"time"
)

// FuzzVerifyState feeds arbitrary state parameters to verify: it never panics, and whatever it
// accepts is exactly what signing the decoded state again produces, so nothing but a state this
// key signed (byte for byte) can pass. Seeds: testdata/fuzz/FuzzVerifyState.
func FuzzVerifyState(f *testing.F) {
	key := bytes.Repeat([]byte{7}, MinStateKeyLength)
	now := time.Unix(1_800_000_000, 0)
	good, err := sign(key, state{Provider: flowA, Workspace: 1, Slug: "acme", Account: 2, Nonce: "n", Expires: now.Add(time.Hour).Unix()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := verify(key, raw, flowA, now)
		if err != nil {
			return
		}
		again, err := sign(key, s)
		if err != nil {
			t.Fatalf("re-sign accepted state: %v", err)
		}
		if _, err := verify(key, again, flowA, now); err != nil {
			t.Fatalf("re-signed accepted state does not verify: %v", err)
		}
		if s.Provider != flowA || s.Nonce == "" || s.Workspace <= 0 || !now.Before(s.expiresAt()) {
			t.Fatalf("accepted an invalid state %+v", s)
		}
	})
}

func TestVerifyRefusesWhatItMust(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MinStateKeyLength)
	other := bytes.Repeat([]byte{8}, MinStateKeyLength)
	now := time.Unix(1_800_000_000, 0)
	st := state{Provider: flowB, Workspace: 1, Slug: "acme", Account: 2, Nonce: "n", Expires: now.Add(time.Hour).Unix()}
	good, _ := sign(key, st)
	foreign, _ := sign(other, st)
	cases := map[string]struct {
		raw  string
		flow string
		at   time.Time
		want error
	}{
		"good":          {good, flowB, now, nil},
		"other key":     {foreign, flowB, now, errStateForged},
		"other flow":    {good, flowA, now, errStateProvider},
		"expired":       {good, flowB, now.Add(time.Hour), errStateExpired},
		"no signature":  {"eyJ9", flowB, now, errStateMalformed},
		"not base64":    {"!!.!!", flowB, now, errStateMalformed},
		"empty":         {"", flowB, now, errStateMalformed},
		"signature cut": {good[:len(good)-3], flowB, now, errStateForged},
	}
	for name, c := range cases {
		if _, err := verify(key, c.raw, c.flow, c.at); err != c.want {
			t.Errorf("%s: verify = %v, want %v", name, err, c.want)
		}
	}
}

// Two flow labels: a state of one never verifies for the other.
const (
	flowA = "app-install"
	flowB = "oauth-install"
)
