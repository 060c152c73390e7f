package beacon_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const secret = "bcn_whs_0123456789abcdef"

var clockNow = time.Unix(1_700_000_000, 0)

func conn(s string) *ports.SourceConnection {
	return &ports.SourceConnection{ID: 3, WorkspaceID: 1, Kind: beacon.Kind, State: connection.Active,
		SourceServerURL: "https://status.beacon.test", Config: map[string]any{}, Secret: []byte(s)}
}

// signed is a request of body with Beacon's signature header under key at t.
func signed(key string, t time.Time, body []byte) ports.Request {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	h := http.Header{}
	h.Set(beacon.HeaderSignature, "t="+ts+",v1="+hex.EncodeToString(mac.Sum(nil)))
	return ports.Request{Headers: h, Body: body, ConnectionID: 3, ReceivedAt: clockNow}
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"id":"d","type":"incident.updated"}`), secret, secret, int64(0), "t=1,v1=00")
	f.Add([]byte(`{}`), "one", "two", int64(301), "")
	f.Fuzz(func(t *testing.T, body []byte, signer, connSecret string, offset int64, header string) {
		hook := beacon.NewWebhook(beacon.Config{Now: func() time.Time { return clockNow }})
		at := clockNow.Add(time.Duration(offset%100_000) * time.Second)
		inWindow := at.Sub(clockNow) <= 5*time.Minute && clockNow.Sub(at) <= 5*time.Minute
		err := hook.Verify(signed(signer, at, body), conn(connSecret))
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
		// Any header: never a panic, never accepted unless it is the true signature.
		forged := ports.Request{Headers: http.Header{beacon.HeaderSignature: {header}}, Body: body}
		if hook.Verify(forged, conn(connSecret)) == nil && header != signed(connSecret, clockNow, body).Headers.Get(beacon.HeaderSignature) {
			t.Fatalf("accepted header %q", header)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"d1","type":"incident.updated","incident":{"id":"inc_42","title":"API latency"}}`))
	f.Add([]byte(`{"id":"d2","type":"incident.resolved","incident":{"id":7}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		hook := beacon.NewWebhook(beacon.Config{Now: func() time.Time { return clockNow }})
		env, err := hook.Parse(signed(secret, clockNow, body), conn(secret))
		if webhooktest.Refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatal("accepted a body that is not JSON")
		}
		if _, kept := env.Headers[beacon.HeaderSignature]; kept {
			t.Fatal("kept the signature header")
		}
		if env.Subject.IsZero() || env.DeliveryKey == "" || env.EventType == "" || !env.Route.ConnectionWide {
			t.Fatalf("incomplete envelope %+v", env)
		}
	})
}
