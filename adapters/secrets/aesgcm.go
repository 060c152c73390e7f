// Package secrets encrypts connection secrets at rest with AES-256-GCM.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// KeySize is the key length AES-256 needs.
const KeySize = 32

// DefaultKeyID names a key given without an id (HEPHAESTUS_CREDENTIALS_KEY as one base64 value,
// or the embedded mode's generated key).
const DefaultKeyID = "default"

var (
	// ErrKeySize: the key is not KeySize bytes long.
	ErrKeySize = fmt.Errorf("credentials key must be %d bytes", KeySize)
	// ErrOpen: the sealed value is truncated, tampered with, sealed for another connection or
	// under a key the box does not have.
	ErrOpen = errors.New("cannot open sealed secret")
	// ErrLegacyClosed (an ErrOpen): the value is sealed in the legacy form and the box's legacy
	// gate says such values no longer open.
	ErrLegacyClosed = fmt.Errorf("%w: sealed before key ids, and values in that form no longer open", ErrOpen)
)

// Key is one credentials key and the id written into what it seals.
type Key struct {
	ID     string
	Secret []byte
}

// String keeps the key's bytes out of any formatted output.
func (k Key) String() string { return "secrets.Key{id:" + k.ID + ",secret:redacted}" }

// GoString keeps the key's bytes out of %#v.
func (k Key) GoString() string { return k.String() }

// sealedVersion starts every value sealed with a key id and associated data. A legacy value
// (nonce || ciphertext, no associated data, no key id) starts with a random nonce byte, so the
// version byte alone does not tell them apart: Open tries the versioned form first.
const sealedVersion = 0x02

// AESGCM is a ports.SecretBox over one or more keys: the first seals, all open. A sealed value
// is version (1 byte) || key id length (1 byte) || key id || nonce (12 bytes) || ciphertext and
// tag. The associated data is the connection id and the header, so a ciphertext moved to
// another connection's row, or relabelled with another key id, does not open. Every Seal draws
// a fresh random 96-bit nonce, which is safe for far more seals than connections exist.
type AESGCM struct {
	keys []sealingKey // keys[0] seals
	// legacyOpens, when set, is asked before Open answers a value in the legacy form, which
	// has no associated data and so opens for any connection id (WithLegacyGate).
	legacyOpens func() bool
}

type sealingKey struct {
	id   string
	aead cipher.AEAD
}

var _ ports.SecretBox = (*AESGCM)(nil)

// NewAESGCM builds a box of one key, DefaultKeyID. The key is not kept beyond the cipher's own
// schedule, and no error names it.
func NewAESGCM(key []byte) (*AESGCM, error) {
	return NewKeyring([]Key{{ID: DefaultKeyID, Secret: key}})
}

// NewKeyring builds a box of several keys: the first seals, every one opens. Errors: no key,
// a key of the wrong size, an id that is empty, too long, repeated or holds ':' or ','.
func NewKeyring(keys []Key) (*AESGCM, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets: at least one credentials key is required")
	}
	b := &AESGCM{}
	seen := map[string]bool{}
	for _, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			return nil, err
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("secrets: key id %q appears twice", k.ID)
		}
		seen[k.ID] = true
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("%w (key %q has %d)", ErrKeySize, k.ID, len(k.Secret))
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("aes cipher: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("gcm: %w", err)
		}
		b.keys = append(b.keys, sealingKey{id: k.ID, aead: aead})
	}
	return b, nil
}

func checkKeyID(id string) error {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, ":, \t\n") {
		return fmt.Errorf("secrets: key id %q must be 1 to 64 characters without ':', ',' or spaces", id)
	}
	return nil
}

// DecodeKey reads a key written in base64 (standard or URL alphabet, padded or not). Errors
// never quote the input.
func DecodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != KeySize {
				return nil, fmt.Errorf("%w (got %d)", ErrKeySize, len(key))
			}
			return key, nil
		}
	}
	return nil, errors.New("credentials key is not base64")
}

// ParseKeys reads HEPHAESTUS_CREDENTIALS_KEY: one base64 key (id DefaultKeyID) or a list
// `id:base64,id:base64,…` whose first key seals. decode reads one base64 key. Errors name the
// entry by position or id, never its value.
func ParseKeys(s string, decode func(string) ([]byte, error)) ([]Key, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, ":") && !strings.Contains(s, ",") {
		k, err := decode(s)
		if err != nil {
			return nil, err
		}
		return []Key{{ID: DefaultKeyID, Secret: k}}, nil
	}
	var keys []Key
	for i, entry := range strings.Split(s, ",") {
		id, value, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok {
			return nil, fmt.Errorf("entry %d is not id:base64", i+1)
		}
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		k, err := decode(value)
		if err != nil {
			return nil, fmt.Errorf("key %q %w", id, err)
		}
		keys = append(keys, Key{ID: id, Secret: k})
	}
	if _, err := NewKeyring(keys); err != nil {
		return nil, err
	}
	return keys, nil
}

// associatedData binds a sealed value to its connection and its header.
func associatedData(connectionID int64, header []byte) []byte {
	ad := strconv.AppendInt([]byte("hephaestus connection secret "), connectionID, 10)
	return append(append(ad, ' '), header...)
}

// Seal encrypts plaintext for connection connectionID under the first key and a fresh nonce.
func (b *AESGCM) Seal(connectionID int64, plaintext []byte) ([]byte, error) {
	k := b.keys[0]
	header := append([]byte{sealedVersion, byte(len(k.id))}, k.id...)
	out := make([]byte, len(header)+k.aead.NonceSize(), len(header)+k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	copy(out, header)
	nonce := out[len(header):]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret nonce: %w", err)
	}
	return k.aead.Seal(out, nonce, plaintext, associatedData(connectionID, header)), nil
}

// Open decrypts what Seal returned for the same connection, under any key of the box, or a
// legacy value (sealed before key ids, without associated data) while LegacyOpens. Errors:
// ErrOpen; ErrLegacyClosed for a legacy value the gate no longer lets open.
func (b *AESGCM) Open(connectionID int64, sealed []byte) ([]byte, error) {
	plain, form, err := b.open(connectionID, sealed)
	if err == nil && form == Legacy && !b.LegacyOpens() {
		clear(plain)
		return nil, ErrLegacyClosed
	}
	return plain, err
}

// WithLegacyGate answers a box of the same keys whose Open asks opens before it answers a value
// in the legacy form: such a value carries no associated data, so nothing binds it to its
// connection, and the service stops opening it once every one was re-sealed (the database
// records it; adapters/postgres/managementstore.LegacyFallback). opens is asked only for a
// value that opens in the legacy form alone, never for the current form. Without a gate
// legacy values open.
func (b *AESGCM) WithLegacyGate(opens func() bool) *AESGCM {
	return &AESGCM{keys: b.keys, legacyOpens: opens}
}

// LegacyOpens reports whether Open answers values in the legacy form now.
func (b *AESGCM) LegacyOpens() bool { return b.legacyOpens == nil || b.legacyOpens() }

// Form is how a sealed value was sealed.
type Form int

// The forms of a sealed value.
const (
	// Legacy: sealed before key ids, without associated data.
	Legacy Form = iota
	// OlderKey: the current form under a key other than the sealing one.
	OlderKey
	// Current: the current form under the sealing key; rotation leaves it alone.
	Current
)

// FormOf tells how sealed was sealed for connectionID (rotation re-seals all but Current); it
// tells a legacy value also when the legacy gate no longer lets it open. Errors: ErrOpen.
func (b *AESGCM) FormOf(connectionID int64, sealed []byte) (Form, error) {
	_, f, err := b.open(connectionID, sealed)
	return f, err
}

func (b *AESGCM) open(connectionID int64, sealed []byte) (plain []byte, form Form, err error) {
	if len(sealed) >= 2 && sealed[0] == sealedVersion && len(sealed) >= 2+int(sealed[1]) {
		n := int(sealed[1])
		id, header := string(sealed[2:2+n]), sealed[:2+n]
		for i, k := range b.keys {
			if k.id != id {
				continue
			}
			rest := sealed[2+n:]
			if len(rest) < k.aead.NonceSize()+k.aead.Overhead() {
				break
			}
			ns := k.aead.NonceSize()
			if p, err := k.aead.Open(nil, rest[:ns], rest[ns:], associatedData(connectionID, header)); err == nil {
				if i == 0 {
					return p, Current, nil
				}
				return p, OlderKey, nil
			}
			break
		}
	}
	// A legacy value: nonce || ciphertext under one of the keys, no associated data.
	for _, k := range b.keys {
		ns := k.aead.NonceSize()
		if len(sealed) < ns+k.aead.Overhead() {
			continue
		}
		if p, err := k.aead.Open(nil, sealed[:ns], sealed[ns:], nil); err == nil {
			return p, Legacy, nil
		}
	}
	return nil, Legacy, ErrOpen
}

// String keeps the ciphers' key schedules out of any %v or %+v of the box. Value receivers, so
// that printing a copy of the struct is covered too.
func (b AESGCM) String() string { return "secrets.AESGCM{keys:redacted}" }

// GoString keeps the key schedules out of %#v.
func (b AESGCM) GoString() string { return b.String() }
