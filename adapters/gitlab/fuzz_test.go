package gitlab_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
)

// plausibleKey leaves out keys that HMAC itself treats as equal to others (trailing NULs pad to
// the same block; keys longer than a block are hashed). Real signing keys are neither.
func plausibleKey(k []byte) bool {
	return len(k) > 0 && len(k) <= sha256.BlockSize && k[len(k)-1] != 0
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"project_id":1}`), []byte("signing-key"), []byte("signing-key"), "token", "v1,AAAA")
	f.Add([]byte(`{}`), []byte("one"), []byte("two"), "whsec_b25l", "")
	f.Fuzz(func(t *testing.T, body, signerKey, connKey []byte, token, header string) {
		hook, err := gitlab.NewWebhook(gitlab.Config{Now: func() time.Time { return clockNow }})
		if err != nil {
			t.Fatal(err)
		}
		secret := "whsec_" + base64.StdEncoding.EncodeToString(connKey)
		c := conn(secret, nil)
		req := request(string(body),
			"webhook-id", "msg_1",
			"webhook-timestamp", strconv.FormatInt(clockNow.Unix(), 10),
			"webhook-signature", standardSignature(signerKey, "msg_1", clockNow, string(body)),
			"X-Gitlab-Token", secret)
		err = hook.Verify(req, c)
		switch {
		case len(connKey) == 0:
			if err == nil {
				t.Fatal("accepted with an empty signing key")
			}
		case plausibleKey(signerKey) && plausibleKey(connKey) && string(signerKey) != string(connKey):
			if err == nil {
				t.Fatal("accepted a body signed with another key (or fell back to the token)")
			}
		case string(signerKey) == string(connKey) && err != nil:
			t.Fatalf("refused a correctly signed body: %v", err)
		}

		// Any signature header: never a panic, and a correct token never rescues it.
		req.Headers.Set("webhook-signature", header)
		if hook.Verify(req, c) == nil && len(connKey) > 0 {
			mac := hmac.New(sha256.New, connKey)
			mac.Write([]byte("msg_1." + strconv.FormatInt(clockNow.Unix(), 10) + "."))
			mac.Write(body)
			want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
			if !containsSignature(header, want) {
				t.Fatalf("accepted signature header %q", header)
			}
		}

		// A token is accepted only when it is exactly the secret.
		tokenReq := request(string(body), "X-Gitlab-Token", token)
		if hook.Verify(tokenReq, conn(string(connKey), nil)) == nil && token != string(connKey) {
			t.Fatalf("accepted token %q for another secret", token)
		}
	})
}

func containsSignature(header, want string) bool {
	for _, entry := range strings.Fields(header) {
		if v, sig, ok := strings.Cut(entry, ","); ok && v == "v1" {
			if got, err := base64.StdEncoding.DecodeString(sig); err == nil && base64.StdEncoding.EncodeToString(got) == want {
				return true
			}
		}
	}
	return false
}

func FuzzParse(f *testing.F) {
	f.Add("Merge Request Hook", []byte(mergeRequestBody), "")
	f.Add("Push Hook", []byte(pushBody), "idem-1")
	f.Add("Member Hook", []byte(memberBody), "")
	f.Add("Emoji Hook", []byte(`{"object_kind":"emoji"}`), "")
	f.Fuzz(func(t *testing.T, event string, body []byte, idempotencyKey string) {
		hook, err := gitlab.NewWebhook(gitlab.Config{Now: func() time.Time { return clockNow }})
		if err != nil {
			t.Fatal(err)
		}
		req := request(string(body), "X-Gitlab-Event", event, "Idempotency-Key", idempotencyKey,
			"X-Gitlab-Token", "t", "webhook-signature", "v1,x")
		env, err := hook.Parse(req, conn(plainToken, map[string]any{"groupId": json.Number("42")}))
		if webhooktest.Refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatal("accepted a body that is not JSON")
		}
		if env.DeliveryKey == "" || len(env.DeliveryKey) > 200 || env.EventType == "" {
			t.Fatalf("envelope without key or event type: %+v", env)
		}
		for name := range env.Headers {
			if http.CanonicalHeaderKey(name) == "X-Gitlab-Token" || http.CanonicalHeaderKey(name) == "Webhook-Signature" {
				t.Fatalf("kept header %s", name)
			}
		}
		if env.DropReason != "" {
			if env.DropReason != gitlab.DropNoProjectOrGroup {
				t.Fatalf("unnamed drop reason %q", env.DropReason)
			}
			return
		}
		if env.Subject.IsZero() || len(env.Route.Resources) == 0 || env.Control || env.Immediate != nil {
			t.Fatalf("incomplete envelope %+v", env)
		}
	})
}
