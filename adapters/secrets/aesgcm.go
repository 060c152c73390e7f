// Package secrets encrypts connection secrets at rest with AES-256-GCM.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// KeySize is the key length AES-256 needs.
const KeySize = 32

var (
	// ErrKeySize: the key is not KeySize bytes long.
	ErrKeySize = fmt.Errorf("credentials key must be %d bytes", KeySize)
	// ErrOpen: the sealed value is truncated, tampered with or sealed under another key.
	ErrOpen = errors.New("cannot open sealed secret")
)

// AESGCM is a ports.SecretBox. A sealed value is nonce || ciphertext-with-tag; every Seal
// draws a fresh random 96-bit nonce, which is safe for far more seals than connections exist.
type AESGCM struct {
	aead cipher.AEAD
}

var _ ports.SecretBox = (*AESGCM)(nil)

// NewAESGCM builds the box from a 32-byte key. The key is not kept beyond the cipher's own
// schedule, and no error names it.
func NewAESGCM(key []byte) (*AESGCM, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrKeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return &AESGCM{aead: aead}, nil
}

// DecodeKey reads a key written in base64 (standard or URL alphabet, padded or not), as
// HEPHAESTUS_CREDENTIALS_KEY holds it. Errors never quote the input.
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

// Seal encrypts plaintext under a fresh random nonce.
func (b *AESGCM) Seal(plaintext []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret nonce: %w", err)
	}
	return b.aead.Seal(nonce, nonce, plaintext, nil), nil
}

// Open decrypts a value Seal returned. Errors: ErrOpen.
func (b *AESGCM) Open(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// String keeps the cipher's key schedule out of any %v or %+v of the box. Value receivers, so
// that printing a copy of the struct is covered too.
func (b AESGCM) String() string { return "secrets.AESGCM{key:redacted}" }

// GoString keeps the key schedule out of %#v.
func (b AESGCM) GoString() string { return b.String() }
