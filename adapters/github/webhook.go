package github

import (
	"crypto/hmac"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Header names GitHub sends.
const (
	headerSignature  = "X-Hub-Signature-256"
	headerEvent      = "X-GitHub-Event"
	headerDelivery   = "X-GitHub-Delivery"
	headerHookID     = "X-GitHub-Hook-ID"
	headerTargetID   = "X-GitHub-Hook-Installation-Target-ID"
	headerTargetType = "X-GitHub-Hook-Installation-Target-Type"
	headerUserAgent  = "User-Agent"
	signaturePrefix  = "sha256="
	appTargetType    = "integration"
)

// keptHeaderNames are stored with the row. Never a signature, Authorization or Cookie header.
var keptHeaderNames = headerNames(headerEvent, headerDelivery, headerHookID, headerTargetID, headerTargetType, headerUserAgent)

// eventHeader and deliveryHeader are read from every delivery.
var (
	eventHeader    = newHeaderName(headerEvent)
	deliveryHeader = newHeaderName(headerDelivery)
)

// Config is the GitHub App's receiving configuration.
type Config struct {
	// WebhookSecret is the App's webhook secret. Without it every delivery is refused
	// (reason not-configured): an unset secret must never mean "accept unsigned".
	WebhookSecret []byte
	// AppID, when set, is the only App whose deliveries are accepted: a delivery that names
	// another App (hook target header, or a control body's installation.app_id) is refused.
	AppID int64
}

func (c Config) validate() error {
	if c.AppID < 0 {
		return errors.New("github: AppID must not be negative")
	}
	return nil
}

// Webhook verifies and parses GitHub App deliveries on POST /webhooks/github.
type Webhook struct {
	webhookjson.Receiver
	secret []byte
	appID  int64
}

var _ webhookjson.Webhook = (*Webhook)(nil)

// NewWebhook validates cfg. The secret is copied so the caller cannot change it afterwards.
// It is not per connection: every installation of the App posts to one URL with one secret.
func NewWebhook(cfg Config) (*Webhook, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Webhook{Receiver: webhookjson.NewReceiver(Provider, false, nil),
		secret: append([]byte(nil), cfg.WebhookSecret...), appID: cfg.AppID}, nil
}

// Verify checks X-Hub-Signature-256, the HMAC-SHA256 of the raw body with the App secret,
// in constant time. conn is ignored (GitHub is not per connection).
// Errors: *ports.RejectedError of kind ErrUnauthenticated.
func (w *Webhook) Verify(req ports.Request, _ *ports.SourceConnection) error {
	if len(w.secret) == 0 {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonNotConfigured, "the GitHub App webhook secret is not set")
	}
	header := req.Headers.Get(headerSignature)
	if header == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingSignature, headerSignature+" is missing")
	}
	hexSig, prefixed := strings.CutPrefix(header, signaturePrefix)
	got, ok := webhookjson.HexDigest(hexSig)
	if !prefixed || !ok {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "signature is not sha256=<hex>")
	}
	if !hmac.Equal(got, webhookjson.Sign(w.secret, req.Body)) {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonBadSignature, "signature does not match the body")
	}
	// The target headers are not signed, so they can only ever refuse, never route: a
	// delivery that says it is another App's is not ours even if the secrets happen to match.
	if w.appID != 0 && strings.EqualFold(req.Headers.Get(headerTargetType), appTargetType) {
		if target := req.Headers.Get(headerTargetID); target != "" && target != strconv.FormatInt(w.appID, 10) {
			return ports.Reject(ports.ErrUnauthenticated, reasonWrongApp, "delivery is for another GitHub App")
		}
	}
	return nil
}

// VerifyHeaders implements contract.HeaderVerifier: every check of Verify but the body's
// signature runs on the headers, before the body is read.
func (w *Webhook) VerifyHeaders(headers http.Header, conn *ports.SourceConnection) error {
	return contract.VerifyHeadersOnly(w, headers, conn)
}

var _ contract.RejectionReasoner = Module{}

// reasonWrongApp refuses a delivery or an installation of another GitHub App.
const reasonWrongApp = "wrong-app"

// RejectionReasons lists every reason the GitHub webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="github",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonNotConfigured, contract.ReasonMissingSignature, contract.ReasonMalformedSignature,
		contract.ReasonBadSignature, reasonWrongApp,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonInvalidPayload,
		contract.ReasonMissingDeliveryID, contract.ReasonInvalidDeliveryID, reasonInvalidEventRoute,
		DropWithoutSource, DropNoRepositoryOrOrg,
	}
}
