package slack

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

// Header names Slack sends.
const (
	headerSignature   = "X-Slack-Signature"
	headerTimestamp   = "X-Slack-Request-Timestamp"
	headerRetryNum    = "X-Slack-Retry-Num"
	headerRetryReason = "X-Slack-Retry-Reason"
	headerUserAgent   = "User-Agent"
	signatureVersion  = "v0"
)

// keptHeaderNames are stored with the row. A retry keeps its event_id, so it deduplicates by
// key; X-Slack-Retry-Num is kept only so operators can see it. Never X-Slack-Signature.
var keptHeaderNames = []string{headerTimestamp, headerRetryNum, headerRetryReason, headerUserAgent}

// Config is the Slack app's receiving configuration.
type Config struct {
	// SigningSecret is the app's signing secret. Without it every delivery is refused
	// (reason not-configured).
	SigningSecret []byte
	// Now is the clock of the timestamp window (nil: time.Now).
	Now webhookjson.Clock
}

// Webhook verifies and parses Slack Events API deliveries on POST /webhooks/slack.
type Webhook struct {
	secret []byte
	now    webhookjson.Clock
}

var (
	_ contract.Webhook        = (*Webhook)(nil)
	_ contract.HeaderVerifier = (*Webhook)(nil)
)

// NewWebhook is the webhook of cfg; the secret is copied so the caller cannot change it. It
// returns an error only to keep the constructors of the provider adapters alike.
func NewWebhook(cfg Config) (*Webhook, error) {
	return &Webhook{secret: append([]byte(nil), cfg.SigningSecret...), now: cfg.Now}, nil
}

func (w *Webhook) Provider() provider.Provider { return Provider }

// PerConnection is false: the app's one signing secret covers every team.
func (w *Webhook) PerConnection() bool { return false }

// Verify checks X-Slack-Signature, "v0=" and the hex HMAC-SHA256 of
// "v0:{X-Slack-Request-Timestamp}:{body}" with the signing secret, and that the timestamp is
// within five minutes of now either way, so a captured request cannot be replayed later.
// conn is ignored. Errors: *ports.RejectedError of kind ErrUnauthenticated.
func (w *Webhook) Verify(req ports.Request, _ *ports.SourceConnection) error {
	if len(w.secret) == 0 {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonNotConfigured, "the Slack signing secret is not set")
	}
	header := req.Headers.Get(headerSignature)
	if header == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingSignature, headerSignature+" is missing")
	}
	ts := req.Headers.Get(headerTimestamp)
	if ts == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingTimestamp, headerTimestamp+" is missing")
	}
	seconds, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedTimestamp, headerTimestamp+" is not whole seconds")
	}
	if err := w.now.CheckFresh(time.Unix(seconds, 0)); err != nil {
		return err
	}
	hexSig, ok := strings.CutPrefix(header, signatureVersion+"=")
	if !ok {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "signature is not v0=<hex>")
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "signature is not v0=<hex>")
	}
	mac := hmac.New(sha256.New, w.secret)
	mac.Write([]byte(signatureVersion + ":" + ts + ":"))
	mac.Write(req.Body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonBadSignature, "signature does not match the body")
	}
	return nil
}

// VerifyHeaders implements contract.HeaderVerifier: every check of Verify but the body's
// signature runs on the headers, before the body is read.
func (w *Webhook) VerifyHeaders(headers http.Header, conn *ports.SourceConnection) error {
	return contract.VerifyHeadersOnly(w, headers, conn)
}
