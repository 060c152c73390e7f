package secrets_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, secrets.KeySize) }

func TestKeyMustBe32Bytes(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		if _, err := secrets.NewAESGCM(make([]byte, n)); !errors.Is(err, secrets.ErrKeySize) {
			t.Errorf("key of %d bytes: err = %v, want ErrKeySize", n, err)
		}
	}
}

func TestSealOpensBackAndHidesThePlaintext(t *testing.T) {
	box, err := secrets.NewAESGCM(key(7))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("whsec_c2VjcmV0LXNpZ25pbmcta2V5")
	a, err := box.Seal(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := box.Seal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(a, plain) {
		t.Fatal("sealed value contains the plaintext")
	}
	if bytes.Equal(a, b) || bytes.Equal(a[:12], b[:12]) {
		t.Fatal("two seals share a nonce")
	}
	for _, sealed := range [][]byte{a, b} {
		got, err := box.Open(sealed)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("open = %q, %v", got, err)
		}
	}
}

func TestOpenRefusesTamperedTruncatedAndForeignValues(t *testing.T) {
	box, _ := secrets.NewAESGCM(key(7))
	other, _ := secrets.NewAESGCM(key(8))
	sealed, _ := box.Seal([]byte("token"))
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for name, v := range map[string][]byte{"tampered": tampered, "truncated": sealed[:10], "empty": nil} {
		if _, err := box.Open(v); !errors.Is(err, secrets.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
	if _, err := other.Open(sealed); !errors.Is(err, secrets.ErrOpen) {
		t.Errorf("other key: err = %v, want ErrOpen", err)
	}
}

func TestDecodeKeyAcceptsBase64AndChecksTheLength(t *testing.T) {
	k := key(9)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		got, err := secrets.DecodeKey(enc.EncodeToString(k))
		if err != nil || !bytes.Equal(got, k) {
			t.Errorf("decode: %v", err)
		}
	}
	if _, err := secrets.DecodeKey(base64.StdEncoding.EncodeToString(k[:16])); !errors.Is(err, secrets.ErrKeySize) {
		t.Errorf("short key: err = %v", err)
	}
	if _, err := secrets.DecodeKey("not base64 !!"); err == nil {
		t.Error("garbage accepted")
	}
}

func TestFormattingTheBoxNeverPrintsKeyMaterial(t *testing.T) {
	box, _ := secrets.NewAESGCM(key(0xAB))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{box, *box} {
			if out := fmt.Sprintf(verb, v); out != "secrets.AESGCM{key:redacted}" {
				t.Errorf("%s printed %q", verb, out)
			}
		}
	}
}
