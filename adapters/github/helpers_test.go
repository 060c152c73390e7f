package github_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const appSecret = "app-webhook-secret"

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// delivery is a GitHub request for event with the given delivery id; extra are header pairs.
func delivery(event, deliveryID string, body string, extra ...string) ports.Request {
	h := http.Header{}
	if event != "" {
		h.Set("X-GitHub-Event", event)
	}
	if deliveryID != "" {
		h.Set("X-GitHub-Delivery", deliveryID)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return ports.Request{Headers: h, Body: []byte(body), ReceivedAt: time.Unix(1_700_000_000, 0)}
}

// beRejected matches a *ports.RejectedError of kind with reason.
var beRejected = webhooktest.BeRejected
