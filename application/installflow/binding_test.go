package installflow

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestBrowserCookieBindsOneStateOfOneFlow(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MinStateKeyLength)
	other := bytes.Repeat([]byte{8}, MinStateKeyLength)
	now := time.Unix(1_800_000_000, 0)
	st := state{Provider: flowA, Workspace: 1, Slug: "acme", Account: 2, Nonce: "n1", Expires: now.Add(time.Hour).Unix()}
	cookie, err := signCookie(key, st)
	if err != nil {
		t.Fatal(err)
	}
	asState, _ := sign(key, st)
	foreign, _ := signCookie(other, st)
	otherLink := st
	otherLink.Nonce = "n2"
	otherFlow := st
	otherFlow.Provider = flowB
	cases := map[string]struct {
		raw  string
		s    state
		at   time.Time
		want error
	}{
		"good":               {cookie, st, now, nil},
		"missing":            {"", st, now, errCookieMissing},
		"the state itself":   {asState, st, now, errCookieInvalid},
		"other key":          {foreign, st, now, errCookieInvalid},
		"another link":       {cookie, otherLink, now, errCookieOther},
		"another flow":       {cookie, otherFlow, now, errCookieOther},
		"expired":            {cookie, st, now.Add(time.Hour), errCookieInvalid},
		"signature cut":      {cookie[:len(cookie)-2], st, now, errCookieInvalid},
		"no signature":       {"eyJ9", st, now, errCookieInvalid},
		"absurdly long text": {string(bytes.Repeat([]byte{'a'}, maxStateLength+1)), st, now, errCookieInvalid},
	}
	for name, c := range cases {
		if err := verifyCookie(key, c.raw, c.s, c.at); err != c.want {
			t.Errorf("%s: verifyCookie = %v, want %v", name, err, c.want)
		}
	}
}

func TestCSRFTokenIsTheStatesOwn(t *testing.T) {
	key := bytes.Repeat([]byte{7}, MinStateKeyLength)
	st := state{Provider: flowA, Workspace: 1, Nonce: "n1"}
	token := csrfToken(key, st)
	if err := verifyCSRF(key, token, st); err != nil {
		t.Fatalf("own token refused: %v", err)
	}
	other := st
	other.Nonce = "n2"
	for name, raw := range map[string]string{"empty": "", "another state's": csrfToken(key, other),
		"another key's": csrfToken(bytes.Repeat([]byte{8}, MinStateKeyLength), st), "cut": token[:len(token)-1]} {
		if err := verifyCSRF(key, raw, st); err != errCSRFInvalid {
			t.Errorf("%s token: verifyCSRF = %v, want errCSRFInvalid", name, err)
		}
	}
}

// FuzzVerifyCookie feeds arbitrary cookie values to verifyCookie: it never panics, and what it
// accepts decodes to exactly the bytes signCookie made for the state (a base64 spelling of
// them may differ in unused bits).
func FuzzVerifyCookie(f *testing.F) {
	key := bytes.Repeat([]byte{7}, MinStateKeyLength)
	now := time.Unix(1_800_000_000, 0)
	st := state{Provider: flowA, Workspace: 1, Slug: "acme", Account: 2, Nonce: "n1", Expires: now.Add(time.Hour).Unix()}
	good, err := signCookie(key, st)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add("eyJwIjoiYXBwLWluc3RhbGwiLCJuIjoibjEiLCJlIjoxODAwMDAzNjAwfQ.AAAA")
	f.Fuzz(func(t *testing.T, raw string) {
		if verifyCookie(key, raw, st, now) != nil {
			return
		}
		decode := func(v string) []byte {
			p, m, _ := strings.Cut(v, ".")
			payload, _ := base64.RawURLEncoding.DecodeString(p)
			mac, _ := base64.RawURLEncoding.DecodeString(m)
			return append(append(payload, '.'), mac...)
		}
		if !bytes.Equal(decode(raw), decode(good)) {
			t.Fatalf("accepted %q, which is not the state's cookie", raw)
		}
	})
}
