package slack_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

var clockNow = time.Unix(1_700_000_000, 0)

func sign(secret string, ts time.Time, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + strconv.FormatInt(ts.Unix(), 10) + ":" + body))
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// signed is a Slack request signed with secret at ts.
func signed(secret string, ts time.Time, body string, extra ...string) ports.Request {
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("X-Slack-Signature", sign(secret, ts, body))
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return ports.Request{Headers: h, Body: []byte(body), ReceivedAt: clockNow}
}

// beRejected matches a *ports.RejectedError of kind with reason.
var beRejected = webhooktest.BeRejected
