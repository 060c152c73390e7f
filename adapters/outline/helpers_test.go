package outline_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
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
	h := http.Header{}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
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
