package outline_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const secret = "ol_whs_0123456789abcdef"

var clockNow = time.UnixMilli(1_700_000_000_123)

func conn(s string) *ports.SourceConnection {
	return &ports.SourceConnection{
		ID: 3, WorkspaceID: 1, Kind: outline.Kind, State: connection.Active,
		SourceServerURL: "https://docs.example.com", Config: map[string]any{}, Secret: []byte(s),
	}
}

// signature is Outline's header for body signed with key at t (written as given).
func signature(key, t, body string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(t + "." + body))
	return "t=" + t + ",s=" + hex.EncodeToString(mac.Sum(nil))
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func request(body string, extra ...string) ports.Request {
	return ports.Request{Headers: webhooktest.Headers(extra...), Body: []byte(body), ConnectionID: 3, ReceivedAt: clockNow}
}

// beRejected matches a *ports.RejectedError of kind with reason.
var beRejected = webhooktest.BeRejected
