package installflow

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
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
// match), which principal started it, a nonce that makes it single-use, and its expiry.
type state struct {
	Provider   string `json:"p"`
	Workspace  int64  `json:"w"`
	Slug       string `json:"s"`
	Account    int64  `json:"a"`
	AdminToken bool   `json:"t,omitempty"`
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
