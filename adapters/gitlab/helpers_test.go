package gitlab_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

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
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return ports.Request{Headers: h, Body: []byte(body), ConnectionID: 3, ReceivedAt: clockNow}
}

func beRejected(kind error, reason string) types.GomegaMatcher {
	return gomega.SatisfyAll(
		gomega.MatchError(kind),
		gomega.WithTransform(func(err error) string {
			var rej *ports.RejectedError
			if errors.As(err, &rej) {
				return rej.Reason
			}
			return "<not a RejectedError>"
		}, gomega.Equal(reason)),
	)
}
