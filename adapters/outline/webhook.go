package outline

import (
	"crypto/hmac"
	"net/http"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
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

// Webhook verifies and parses deliveries on POST /webhooks/outline/{connectionId}: it is per
// connection, every connection has its own URL and secret.
type Webhook struct{ webhookjson.Receiver }

var _ webhookjson.Webhook = (*Webhook)(nil)

// NewWebhook is the webhook of cfg. It returns an error only to keep the constructors of the
// provider adapters alike.
func NewWebhook(cfg Config) (*Webhook, error) {
	return &Webhook{webhookjson.NewReceiver(Provider, true, cfg.Now)}, nil
}

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
	if err := w.CheckUnix(ts, time.Millisecond, "signature without t=", "t= is not whole milliseconds"); err != nil {
		return err
	}
	want := webhookjson.Sign(secret, []byte(ts+"."), req.Body)
	candidates := 0
	for _, s := range signatures {
		got, ok := webhookjson.HexDigest(s)
		if !ok {
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

var _ contract.RejectionReasoner = Module{}

// RejectionReasons lists every reason the Outline webhook refuses a delivery with
// (webhook_rejected_total{provider="outline",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonMissingConnection, contract.ReasonNotConfigured, contract.ReasonMissingSignature,
		contract.ReasonMalformedSignature, contract.ReasonMissingTimestamp, contract.ReasonMalformedTimestamp,
		contract.ReasonStaleTimestamp, contract.ReasonBadSignature, contract.ReasonInvalidPayload,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonMissingDeliveryID,
		contract.ReasonInvalidDeliveryID,
	}
}
