package github_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// plausibleKey leaves out keys that HMAC itself treats as equal to others: trailing NUL bytes
// pad to the same block, and keys longer than a block are replaced by their hash. Real secrets
// are neither, and without this the property would blame HMAC, not the verifier.
func plausibleKey(k string) bool {
	return len(k) <= sha256.BlockSize && !strings.Contains(k, "\x00")
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"installation":{"id":1}}`), "app-webhook-secret", "app-webhook-secret", "sha256=00")
	f.Add([]byte(`{}`), "one", "two", "")
	f.Add([]byte(``), "", "secret", "sha256=")
	f.Fuzz(func(t *testing.T, body []byte, signer, secret, header string) {
		hook, err := github.NewWebhook(github.Config{WebhookSecret: []byte(secret)})
		if err != nil {
			t.Fatal(err)
		}
		signed := ports.Request{Headers: http.Header{"X-Hub-Signature-256": {sign(signer, body)}}, Body: body}
		err = hook.Verify(signed, nil)
		switch {
		case secret == "":
			if err == nil {
				t.Fatal("accepted a delivery while no secret is configured")
			}
		case signer != secret && plausibleKey(signer) && plausibleKey(secret):
			if err == nil {
				t.Fatalf("accepted a body signed with another secret")
			}
		case signer == secret && err != nil:
			t.Fatalf("refused a correctly signed body: %v", err)
		}
		if err != nil && !errors.Is(err, ports.ErrUnauthenticated) {
			t.Fatalf("refusal of kind other than unauthenticated: %v", err)
		}

		// Any header value: never a panic, and accepted only if it is the body's true signature.
		forged := ports.Request{Headers: http.Header{"X-Hub-Signature-256": {header}}, Body: body}
		if hook.Verify(forged, nil) == nil {
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(body)
			if !strings.EqualFold(header, "sha256="+hex.EncodeToString(mac.Sum(nil))) {
				t.Fatalf("accepted header %q that is not the body's signature", header)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add("issues", []byte(issueBody))
	f.Add("installation", []byte(installationBody))
	f.Add("installation_repositories", []byte(issueBody))
	f.Add("ping", []byte(`{"zen":"x"}`))
	f.Add("star", []byte(`{"repository":{"id":"12"},"installation":{"id":1.0}}`))
	f.Add("security_advisory", []byte(`{"installation":{"id":1}}`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		hook, err := github.NewWebhook(github.Config{WebhookSecret: []byte(appSecret), AppID: 42})
		if err != nil {
			t.Fatal(err)
		}
		req := delivery(event, "fuzz-delivery", string(body), "X-Hub-Signature-256", "sha256=00", "Cookie", "c=1")
		env, err := hook.Parse(req, nil)
		if err != nil {
			var rej *ports.RejectedError
			if !errors.As(err, &rej) || rej.Reason == "" {
				t.Fatalf("error is not a reasoned *ports.RejectedError: %#v", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON")
		}
		for name := range env.Headers {
			if strings.HasPrefix(name, "X-Hub-Signature") || name == "Cookie" || name == "Authorization" {
				t.Fatalf("kept header %s", name)
			}
		}
		switch {
		case env.Immediate != nil:
			if event != "ping" {
				t.Fatalf("immediate answer for %q", event)
			}
		case env.DropReason != "":
			if env.DropReason != github.DropWithoutSource && env.DropReason != github.DropNoRepositoryOrOrg {
				t.Fatalf("unnamed drop reason %q", env.DropReason)
			}
		default:
			if env.Subject.IsZero() || env.DeliveryKey != "fuzz-delivery" || env.Route.SourceKey == "" || env.Route.SourceKind != "GITHUB_APP" {
				t.Fatalf("incomplete envelope %+v", env)
			}
			if env.Control != github.IsControlEvent(event) {
				t.Fatalf("control %v for event %q", env.Control, event)
			}
			if env.Control != (len(env.Route.Resources) == 0) {
				t.Fatalf("resources %v for control %v", env.Route.Resources, env.Control)
			}
			if !env.Control && !strings.HasPrefix(env.Subject.String(), "github:repository:") && !strings.HasPrefix(env.Subject.String(), "github:organization:") {
				t.Fatalf("work subject %s", env.Subject)
			}
		}
	})
}
