package slack_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"type":"event_callback"}`), signingSecret, signingSecret, int64(0), "v0=00")
	f.Add([]byte(`{}`), "one", "two", int64(-301), "")
	f.Add([]byte(`{}`), signingSecret, signingSecret, int64(299), "v0=")
	f.Fuzz(func(t *testing.T, body []byte, signer, secret string, offset int64, header string) {
		hook, err := slack.NewWebhook(slack.Config{SigningSecret: []byte(secret), Now: func() time.Time { return clockNow }})
		if err != nil {
			t.Fatal(err)
		}
		at := clockNow.Add(time.Duration(offset%100_000) * time.Second)
		inWindow := at.Sub(clockNow) <= 5*time.Minute && clockNow.Sub(at) <= 5*time.Minute
		err = hook.Verify(signed(signer, at, string(body)), nil)
		switch {
		case secret == "" || !inWindow:
			if err == nil {
				t.Fatalf("accepted without a secret or outside the window (offset %ds)", offset%100_000)
			}
		case signer != secret && webhooktest.PlausibleKey(signer) && webhooktest.PlausibleKey(secret):
			if err == nil {
				t.Fatal("accepted a body signed with another secret")
			}
		case signer == secret && err != nil:
			t.Fatalf("refused a correctly signed body: %v", err)
		}
		if err != nil && !errors.Is(err, ports.ErrUnauthenticated) {
			t.Fatalf("refusal of kind other than unauthenticated: %v", err)
		}

		// Any signature header: never a panic, accepted only if it is the true signature.
		req := signed(secret, clockNow, string(body))
		want := req.Headers.Get("X-Slack-Signature")
		req.Headers.Set("X-Slack-Signature", header)
		if hook.Verify(req, nil) == nil && !strings.EqualFold(header, want) {
			t.Fatalf("accepted header %q", header)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(callback("Ev1", `{"type":"message","channel":"C1","channel_type":"channel"}`)))
	f.Add([]byte(callback("Ev2", `{"type":"message","channel":"D1","subtype":"message_changed"}`)))
	f.Add([]byte(callback("Ev3", `{"type":"reaction_added","item":{"channel":"C2"}}`)))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Add([]byte(`{"type":"app_rate_limited"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		hook, err := slack.NewWebhook(slack.Config{SigningSecret: []byte(signingSecret)})
		if err != nil {
			t.Fatal(err)
		}
		req := ports.Request{Headers: http.Header{
			"X-Slack-Signature":         {"v0=00"},
			"X-Slack-Request-Timestamp": {strconv.FormatInt(clockNow.Unix(), 10)},
		}, Body: body}
		env, err := hook.Parse(req, nil)
		if webhooktest.Refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatal("accepted a body that is not JSON")
		}
		if _, kept := env.Headers["X-Slack-Signature"]; kept {
			t.Fatal("kept the signature header")
		}
		switch {
		case env.Immediate != nil:
			if env.EventType != "url_verification" {
				t.Fatalf("immediate answer for %q", env.EventType)
			}
		case env.DropReason != "":
			if env.DropReason != slack.DropUnsupportedType {
				t.Fatalf("unnamed drop reason %q", env.DropReason)
			}
		default:
			if env.Subject.IsZero() || env.DeliveryKey == "" || env.EventType == "" || env.Route.SourceKind != "SLACK" || env.Route.SourceKey == "" {
				t.Fatalf("incomplete envelope %+v", env)
			}
			channelScoped := strings.HasPrefix(env.Subject.String(), "slack:channel:")
			if env.Route.ConnectionWide == channelScoped || channelScoped != (len(env.Route.Resources) == 1) {
				t.Fatalf("subject %s does not match route %+v", env.Subject, env.Route)
			}
			if channelScoped && strings.HasPrefix(env.Route.Resources[0].ID, "D") {
				t.Fatalf("direct-message channel %s became a scope", env.Route.Resources[0].ID)
			}
		}
	})
}
