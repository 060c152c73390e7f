package outline_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"id":"d","event":"documents.update"}`), secret, secret, int64(0), "t=1,s=00")
	f.Add([]byte(`{}`), "one", "two", int64(300_001), "")
	f.Add([]byte(`{}`), secret, secret, int64(-300_000), "s=,t=")
	f.Fuzz(func(t *testing.T, body []byte, signer, connSecret string, offsetMillis int64, header string) {
		hook, err := outline.NewWebhook(outline.Config{Now: func() time.Time { return clockNow }})
		if err != nil {
			t.Fatal(err)
		}
		c := conn(connSecret)
		at := clockNow.Add(time.Duration(offsetMillis%100_000_000) * time.Millisecond)
		inWindow := at.Sub(clockNow) <= 5*time.Minute && clockNow.Sub(at) <= 5*time.Minute
		req := request(string(body), "Outline-Signature", signature(signer, millis(at), string(body)))
		err = hook.Verify(req, c)
		switch {
		case connSecret == "" || !inWindow:
			if err == nil {
				t.Fatal("accepted without a secret or outside the window")
			}
		case signer != connSecret && webhooktest.PlausibleKey(signer) && webhooktest.PlausibleKey(connSecret):
			if err == nil {
				t.Fatal("accepted a body signed with another secret")
			}
		case signer == connSecret && err != nil:
			t.Fatalf("refused a correctly signed body: %v", err)
		}
		if err != nil && !errors.Is(err, ports.ErrUnauthenticated) {
			t.Fatalf("refusal of kind other than unauthenticated: %v", err)
		}

		// The same signature with t in seconds is never fresh.
		seconds := request(string(body), "Outline-Signature", signature(connSecret, strconv.FormatInt(at.Unix(), 10), string(body)))
		if hook.Verify(seconds, c) == nil {
			t.Fatal("accepted a timestamp in seconds")
		}

		// Any header: never a panic, accepted only with the true signature of its own t.
		forged := request(string(body), "Outline-Signature", header)
		if hook.Verify(forged, c) == nil {
			var ts string
			var sigs []string
			for _, part := range strings.Split(header, ",") {
				k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
				if k == "t" {
					ts = v
				} else if k == "s" {
					sigs = append(sigs, strings.ToLower(v))
				}
			}
			mac := hmac.New(sha256.New, []byte(connSecret))
			mac.Write([]byte(ts + "."))
			mac.Write(body)
			want := hex.EncodeToString(mac.Sum(nil))
			found := false
			for _, s := range sigs {
				found = found || s == want
			}
			if !found {
				t.Fatalf("accepted header %q", header)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(envelope("d1", "documents.update", `{"id":"doc","model":{"id":"doc","collectionId":"col"}}`)))
	f.Add([]byte(envelope("d2", "collections.create", `{"id":"col","model":{"id":"col"}}`)))
	f.Add([]byte(envelope("d3", "comments.create", `{"model":{"documentId":"doc"}}`)))
	f.Add([]byte(envelope("d4", "users.create", `{"model":{"id":"u"}}`)))
	f.Fuzz(func(t *testing.T, body []byte) {
		hook, err := outline.NewWebhook(outline.Config{Now: func() time.Time { return clockNow }})
		if err != nil {
			t.Fatal(err)
		}
		env, err := hook.Parse(request(string(body), "Outline-Signature", "t=1,s=00"), conn(secret))
		if webhooktest.Refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatal("accepted a body that is not JSON")
		}
		if _, kept := env.Headers["Outline-Signature"]; kept {
			t.Fatal("kept the signature header")
		}
		if env.Subject.IsZero() || env.DeliveryKey == "" || env.EventType == "" || env.Immediate != nil || env.DropReason != "" || env.Control {
			t.Fatalf("incomplete envelope %+v", env)
		}
		if env.Route.ConnectionWide == (len(env.Route.Resources) == 1) {
			t.Fatalf("route %+v is neither connection-wide nor one collection", env.Route)
		}
	})
}
