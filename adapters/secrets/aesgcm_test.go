package secrets_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
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
	a, err := box.Seal(42, plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := box.Seal(42, plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(a, plain) {
		t.Fatal("sealed value contains the plaintext")
	}
	if bytes.Equal(a, b) || bytes.Equal(a[:20], b[:20]) {
		t.Fatal("two seals share a nonce")
	}
	for _, sealed := range [][]byte{a, b} {
		got, err := box.Open(42, sealed)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("open = %q, %v", got, err)
		}
	}
}

func TestOpenRefusesTamperedTruncatedAndForeignValues(t *testing.T) {
	box, _ := secrets.NewAESGCM(key(7))
	other, _ := secrets.NewAESGCM(key(8))
	sealed, _ := box.Seal(42, []byte("token"))
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for name, v := range map[string][]byte{"tampered": tampered, "truncated": sealed[:10], "empty": nil} {
		if _, err := box.Open(42, v); !errors.Is(err, secrets.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
	if _, err := other.Open(42, sealed); !errors.Is(err, secrets.ErrOpen) {
		t.Errorf("other key: err = %v, want ErrOpen", err)
	}
	if _, err := box.Open(43, sealed); !errors.Is(err, secrets.ErrOpen) {
		t.Errorf("moved to another connection: err = %v, want ErrOpen", err)
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
			if out := fmt.Sprintf(verb, v); out != "secrets.AESGCM{keys:redacted}" {
				t.Errorf("%s printed %q", verb, out)
			}
		}
	}
}

func TestKeyringSealsWithTheFirstKeyAndOpensWithEvery(t *testing.T) {
	old, _ := secrets.NewKeyring([]secrets.Key{{ID: "2025", Secret: key(1)}})
	ring, err := secrets.NewKeyring([]secrets.Key{{ID: "2026", Secret: key(2)}, {ID: "2025", Secret: key(1)}})
	if err != nil {
		t.Fatal(err)
	}
	byOld, _ := old.Seal(7, []byte("s3cret"))
	if got, err := ring.Open(7, byOld); err != nil || string(got) != "s3cret" {
		t.Fatalf("open an older key's value: %q, %v", got, err)
	}
	if f, _ := ring.FormOf(7, byOld); f != secrets.OlderKey {
		t.Fatal("a value of an older key is not current")
	}
	byNew, _ := ring.Seal(7, []byte("s3cret"))
	if !bytes.Contains(byNew[:10], []byte("2026")) {
		t.Fatal("the key id is written into the value")
	}
	if f, err := ring.FormOf(7, byNew); f != secrets.Current || err != nil {
		t.Fatalf("a value of the sealing key is current: %v", err)
	}
	if _, err := old.Open(7, byNew); !errors.Is(err, secrets.ErrOpen) {
		t.Fatal("a box without the key cannot open")
	}
	// Relabelling the key id breaks the associated data.
	relabelled := bytes.Replace(bytes.Clone(byNew), []byte("2026"), []byte("2025"), 1)
	if _, err := ring.Open(7, relabelled); !errors.Is(err, secrets.ErrOpen) {
		t.Fatal("a relabelled value opened")
	}
}

func TestLegacyValuesOpenAndAreNotCurrent(t *testing.T) {
	// The form before key ids: nonce || AES-256-GCM ciphertext, no associated data.
	block, _ := aes.NewCipher(key(3))
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	legacy := aead.Seal(bytes.Clone(nonce), nonce, []byte("legacy-token"), nil)
	ring, _ := secrets.NewKeyring([]secrets.Key{{ID: "new", Secret: key(4)}, {ID: "default", Secret: key(3)}})
	got, err := ring.Open(99, legacy)
	if err != nil || string(got) != "legacy-token" {
		t.Fatalf("legacy open: %q, %v", got, err)
	}
	if f, _ := ring.FormOf(99, legacy); f != secrets.Legacy {
		t.Fatal("a legacy value is never current")
	}
}

func TestLegacyGate(t *testing.T) {
	block, _ := aes.NewCipher(key(3))
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	legacy := aead.Seal(bytes.Clone(nonce), nonce, []byte("legacy-token"), nil)
	ring, _ := secrets.NewKeyring([]secrets.Key{{ID: "default", Secret: key(3)}})
	current, _ := ring.Seal(7, []byte("current-token"))

	asked, opens := 0, true
	gated := ring.WithLegacyGate(func() bool { asked++; return opens })
	if got, err := gated.Open(7, current); err != nil || string(got) != "current-token" || asked != 0 {
		t.Fatalf("current value: %q, %v, gate asked %d times", got, err, asked)
	}
	if got, err := gated.Open(99, legacy); err != nil || string(got) != "legacy-token" || asked != 1 {
		t.Fatalf("legacy value, gate open: %q, %v, gate asked %d times", got, err, asked)
	}
	opens = false
	if got, err := gated.Open(99, legacy); !errors.Is(err, secrets.ErrLegacyClosed) || !errors.Is(err, secrets.ErrOpen) || got != nil {
		t.Fatalf("legacy value, gate closed: %q, %v", got, err)
	}
	if f, err := gated.FormOf(99, legacy); err != nil || f != secrets.Legacy {
		t.Fatalf("a closed gate still tells the form: %v, %v", f, err)
	}
	if got, err := gated.Open(7, current); err != nil || string(got) != "current-token" {
		t.Fatalf("a closed gate never shuts the current form: %q, %v", got, err)
	}
}

func TestParseKeys(t *testing.T) {
	b64 := func(b byte) string { return base64.StdEncoding.EncodeToString(key(b)) }
	keys, err := secrets.ParseKeys("new:"+b64(1)+", old:"+b64(2), secrets.DecodeKey)
	if err != nil || len(keys) != 2 || keys[0].ID != "new" || keys[1].ID != "old" || !bytes.Equal(keys[1].Secret, key(2)) {
		t.Fatalf("parse list: %v, %v", keys, err)
	}
	keys, err = secrets.ParseKeys(b64(5), secrets.DecodeKey)
	if err != nil || len(keys) != 1 || keys[0].ID != secrets.DefaultKeyID {
		t.Fatalf("parse one: %v, %v", keys, err)
	}
	for _, bad := range []string{"a:" + b64(1) + ",a:" + b64(2), "a:" + b64(1) + "," + b64(2), ":" + b64(1), "a:short"} {
		if _, err := secrets.ParseKeys(bad, secrets.DecodeKey); err == nil {
			t.Errorf("accepted a bad list")
		} else if strings.Contains(err.Error(), b64(1)) {
			t.Errorf("error quotes a key: %v", err)
		}
	}
}
