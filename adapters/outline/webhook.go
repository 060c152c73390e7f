package outline

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

const (
	headerSignature = "Outline-Signature"
	headerUserAgent = "User-Agent"
)

// keptHeaderNames are stored with the row: Outline sends no event or delivery header (both are
// in the body), so only its User-Agent. Never Outline-Signature.
var keptHeaderNames = []string{headerUserAgent}

// Config is Outline's receiving configuration; secrets are per connection.
type Config struct {
	// Now is the clock of the timestamp window (nil: time.Now).
	Now webhookjson.Clock
}

// Webhook verifies and parses deliveries on POST /webhooks/outline/{connectionId}.
type Webhook struct {
	now webhookjson.Clock
}

var (
	_ contract.Webhook        = (*Webhook)(nil)
	_ contract.HeaderVerifier = (*Webhook)(nil)
)

// NewWebhook is the webhook of cfg. It returns an error only to keep the constructors of the
// provider adapters alike.
func NewWebhook(cfg Config) (*Webhook, error) {
	return &Webhook{now: cfg.Now}, nil
}

func (w *Webhook) Provider() provider.Provider { return Provider }

// PerConnection is true: every connection has its own URL and secret.
func (w *Webhook) PerConnection() bool { return true }

// Verify checks "Outline-Signature: t=<ms>,s=<hex>", the HMAC-SHA256 of "{t}.{body}" with the
// connection's secret. t is in MILLISECONDS since the epoch; a timestamp in seconds reads as
// January 1970 and is refused as stale, like any outside five minutes of now either way.
// Errors: *ports.RejectedError of kind ErrUnauthenticated.
func (w *Webhook) Verify(req ports.Request, conn *ports.SourceConnection) error {
	secret, err := webhookjson.ConnectionSecret(conn, "Outline")
	if err != nil {
		return err
	}
	header := req.Headers.Get(headerSignature)
	if header == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingSignature, headerSignature+" is missing")
	}
	var ts string
	var signatures []string
	for _, part := range strings.Split(header, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "t":
			if ts != "" {
				return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "more than one t=")
			}
			ts = value
		case "s":
			signatures = append(signatures, value)
		}
	}
	if ts == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingTimestamp, "signature without t=")
	}
	millis, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedTimestamp, "t= is not whole milliseconds")
	}
	if err := w.now.CheckFresh(time.UnixMilli(millis)); err != nil {
		return err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(req.Body)
	want := mac.Sum(nil)
	candidates := 0
	for _, s := range signatures {
		got, err := hex.DecodeString(s)
		if err != nil || len(got) != sha256.Size {
			continue
		}
		candidates++
		if hmac.Equal(got, want) {
			return nil
		}
	}
	if candidates == 0 {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "no s=<hex> signature")
	}
	return ports.Reject(ports.ErrUnauthenticated, contract.ReasonBadSignature, "signature does not match the body")
}

// VerifyHeaders implements contract.HeaderVerifier: every check of Verify but the body's
// signature runs on the headers, before the body is read.
func (w *Webhook) VerifyHeaders(headers http.Header, conn *ports.SourceConnection) error {
	return contract.VerifyHeadersOnly(w, headers, conn)
}
