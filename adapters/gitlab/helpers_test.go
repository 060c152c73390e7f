package gitlab_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
)

const (
	plainToken = "gitlab-hook-token"
	instance   = "https://gitlab.example.com"
)

var (
	signingKey = []byte("0123456789abcdef0123456789abcdef")
	whsecKey   = "whsec_" + base64.StdEncoding.EncodeToString(signingKey)
	clockNow   = time.Unix(1_700_000_000, 0)
)

func conn(secret string, config map[string]any) *ports.SourceConnection {
	return &ports.SourceConnection{
		ID: 3, WorkspaceID: 1, Kind: gitlab.Kind, State: connection.Active,
		SourceServerURL: instance + "/", Config: config, Secret: []byte(secret),
	}
}

// standardSignature is a Standard Webhooks "v1,<base64>" entry.
func standardSignature(key []byte, id string, ts time.Time, body string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "." + body))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func request(body string, headers ...string) ports.Request {
	return ports.Request{Headers: webhooktest.Headers(headers...), Body: []byte(body), ConnectionID: 3, ReceivedAt: clockNow}
}

// beRejected matches a *ports.RejectedError of kind with reason.
var beRejected = webhooktest.BeRejected
