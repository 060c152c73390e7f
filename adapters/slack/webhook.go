package slack

import (
	"crypto/hmac"
	"net/http"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
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
	webhookjson.Receiver
	secret []byte
}

var _ webhookjson.Webhook = (*Webhook)(nil)

// NewWebhook is the webhook of cfg; the secret is copied so the caller cannot change it. It
// returns an error only to keep the constructors of the provider adapters alike. It is not
// per connection: the app's one signing secret covers every team.
func NewWebhook(cfg Config) (*Webhook, error) {
	return &Webhook{Receiver: webhookjson.NewReceiver(Provider, false, cfg.Now),
		secret: append([]byte(nil), cfg.SigningSecret...)}, nil
}

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
	if err := w.CheckUnix(ts, time.Second, headerTimestamp+" is missing", headerTimestamp+" is not whole seconds"); err != nil {
		return err
	}
	hexSig, prefixed := strings.CutPrefix(header, signatureVersion+"=")
	got, ok := webhookjson.HexDigest(hexSig)
	if !prefixed || !ok {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "signature is not v0=<hex>")
	}
	if !hmac.Equal(got, webhookjson.Sign(w.secret, []byte(signatureVersion+":"+ts+":"), req.Body)) {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonBadSignature, "signature does not match the body")
	}
	return nil
}

// VerifyHeaders implements contract.HeaderVerifier: every check of Verify but the body's
// signature runs on the headers, before the body is read.
func (w *Webhook) VerifyHeaders(headers http.Header, conn *ports.SourceConnection) error {
	return contract.VerifyHeadersOnly(w, headers, conn)
}

var _ contract.RejectionReasoner = Module{}

// reasonMissingTeam refuses an event_callback without team_id (nothing to route by).
const reasonMissingTeam = "missing-team"

// RejectionReasons lists every reason the Slack webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="slack",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonNotConfigured, contract.ReasonMissingSignature, contract.ReasonMissingTimestamp,
		contract.ReasonMalformedTimestamp, contract.ReasonStaleTimestamp, contract.ReasonMalformedSignature,
		contract.ReasonBadSignature, contract.ReasonInvalidPayload, contract.ReasonMissingEventType,
		contract.ReasonInvalidEventType, contract.ReasonMissingDeliveryID, contract.ReasonInvalidDeliveryID,
		reasonMissingTeam, DropUnsupportedType,
	}
}
