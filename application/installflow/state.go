package installflow

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// MinStateKeyLength is the shortest HMAC key accepted for signing states.
const MinStateKeyLength = 32

// maxStateLength refuses absurd state parameters before decoding them.
const maxStateLength = 1024

// state is what an install link carries through the provider and back: which flow, which
// workspace (id and slug, so a workspace deleted and created again under the slug does not
// match), which principal started it and with which token (the account token's id, or the
// configured administrator token's keyed fingerprint, so the flow ends when that token stops
// authenticating), a nonce that makes it single-use, and its expiry.
type state struct {
	Provider   string `json:"p"`
	Workspace  int64  `json:"w"`
	Slug       string `json:"s"`
	Account    int64  `json:"a"`
	Token      int64  `json:"k,omitempty"` // the account token that started the flow
	AdminToken bool   `json:"t,omitempty"`
	// AdminPrint is management.AdminTokenFingerprint under adminPrintKey, base64url, when the
	// administrator token started the flow.
	AdminPrint string `json:"f,omitempty"`
	Nonce      string `json:"n"`
	Expires    int64  `json:"e"` // Unix seconds
}

func (s state) expiresAt() time.Time { return time.Unix(s.Expires, 0).UTC() }

// Why a state is refused; each is logged as the refusal's reason.
var (
	errStateMalformed = errors.New("state-malformed")
	errStateForged    = errors.New("state-signature-invalid")
	errStateExpired   = errors.New("state-expired")
	errStateProvider  = errors.New("state-of-other-flow")
)

func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// sign encodes s as base64url(JSON) "." base64url(HMAC-SHA256(key, JSON)).
func sign(key []byte, s state) (string, error) {
	payload, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// verify checks the signature (constant time) before it looks at the content, then the flow
// and the expiry. Errors: the errState… values above.
func verify(key []byte, raw, provider string, now time.Time) (state, error) {
	if raw == "" || len(raw) > maxStateLength {
		return state{}, errStateMalformed
	}
	p, m, ok := strings.Cut(raw, ".")
	if !ok {
		return state{}, errStateMalformed
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return state{}, errStateMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(m)
	if err != nil {
		return state{}, errStateMalformed
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(payload)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return state{}, errStateForged
	}
	var s state
	if err := json.Unmarshal(payload, &s); err != nil || s.Nonce == "" || s.Workspace <= 0 {
		return state{}, errStateMalformed
	}
	if s.Provider != provider {
		return state{}, errStateProvider
	}
	if !now.Before(s.expiresAt()) {
		return state{}, errStateExpired
	}
	return s, nil
}

// The browser binding (CONTRACT.md "Install flows"): the start also hands the browser that
// asked a cookie, signed with a key of its own (derived from the state key, so a state is never
// a cookie), that names the state's flow and nonce and expires with it. The callback requires
// it: an install link opened in another browser (an attacker's link in a victim's) has no cookie
// or one of another flow, and completes nothing. The confirmation form carries a CSRF token,
// derived from the state's nonce with a third key.
type binding struct {
	Provider string `json:"p"`
	Nonce    string `json:"n"`
	Expires  int64  `json:"e"` // Unix seconds
}

// Why a browser binding is refused; each is logged as the refusal's reason.
var (
	errCookieMissing = errors.New("browser-cookie-missing")
	errCookieInvalid = errors.New("browser-cookie-invalid")
	errCookieOther   = errors.New("browser-cookie-of-other-flow")
	errCSRFInvalid   = errors.New("csrf-token-invalid")
)

func derive(key []byte, label string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(label))
	return mac.Sum(nil)
}

func cookieKey(key []byte) []byte { return derive(key, "hephaestus install-flow browser cookie v1") }
func csrfKey(key []byte) []byte   { return derive(key, "hephaestus install-flow csrf v1") }
func adminPrintKey(key []byte) []byte {
	return derive(key, "hephaestus install-flow administrator token fingerprint v1")
}

// signCookie is the browser cookie's value for s: base64url(JSON) "." base64url(HMAC).
func signCookie(key []byte, s state) (string, error) {
	payload, err := json.Marshal(binding{Provider: s.Provider, Nonce: s.Nonce, Expires: s.Expires})
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, cookieKey(key))
	mac.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// verifyCookie checks that raw is a cookie this key signed for the very state s (its flow and
// nonce) and that it has not expired. Errors: the errCookie… values above.
func verifyCookie(key []byte, raw string, s state, now time.Time) error {
	if raw == "" {
		return errCookieMissing
	}
	if len(raw) > maxStateLength {
		return errCookieInvalid
	}
	p, m, ok := strings.Cut(raw, ".")
	if !ok {
		return errCookieInvalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return errCookieInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(m)
	if err != nil {
		return errCookieInvalid
	}
	mac := hmac.New(sha256.New, cookieKey(key))
	mac.Write(payload)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errCookieInvalid
	}
	var b binding
	if err := json.Unmarshal(payload, &b); err != nil {
		return errCookieInvalid
	}
	if b.Provider != s.Provider || subtle.ConstantTimeCompare([]byte(b.Nonce), []byte(s.Nonce)) != 1 {
		return errCookieOther
	}
	if !now.Before(time.Unix(b.Expires, 0)) {
		return errCookieInvalid
	}
	return nil
}

// csrfToken is the confirmation form's token for s.
func csrfToken(key []byte, s state) string {
	mac := hmac.New(sha256.New, csrfKey(key))
	mac.Write([]byte(s.Provider + "\x00" + s.Nonce))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verifyCSRF compares a submitted token with s's in constant time.
func verifyCSRF(key []byte, submitted string, s state) error {
	if submitted == "" || !hmac.Equal([]byte(submitted), []byte(csrfToken(key, s))) {
		return errCSRFInvalid
	}
	return nil
}
