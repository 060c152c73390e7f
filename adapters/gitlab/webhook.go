package gitlab

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Header names GitLab sends. Standard Webhooks headers are lower-case in GitLab's requests;
// http.Header lookups are case-insensitive anyway.
const (
	headerToken       = "X-Gitlab-Token"
	headerEvent       = "X-Gitlab-Event"
	headerEventUUID   = "X-Gitlab-Event-UUID"
	headerIdempotency = "Idempotency-Key"
	headerInstance    = "X-Gitlab-Instance"
	headerWebhookUUID = "X-Gitlab-Webhook-UUID"
	headerSWID        = "webhook-id"
	headerSWTimestamp = "webhook-timestamp"
	headerSWSignature = "webhook-signature"
	headerUserAgent   = "User-Agent"
	signingKeyPrefix  = "whsec_"
	signatureVersion  = "v1"
)

// keptHeaderNames are stored with the row. Never X-Gitlab-Token or webhook-signature.
var keptHeaderNames = []string{headerEvent, headerEventUUID, headerIdempotency, headerInstance, headerWebhookUUID, headerSWID, headerSWTimestamp, headerUserAgent}

// Config is GitLab's receiving configuration; secrets are per connection.
type Config struct {
	// Now is the clock of the Standard Webhooks timestamp window (nil: time.Now).
	Now webhookjson.Clock
}

// Webhook verifies and parses deliveries on POST /webhooks/gitlab/{connectionId}: it is per
// connection, every connection has its own URL and secret.
type Webhook struct{ webhookjson.Receiver }

var _ webhookjson.Webhook = (*Webhook)(nil)

// NewWebhook is the webhook of cfg. It returns an error only to keep the constructors of the
// provider adapters alike; GitLab's Config has nothing that can be invalid.
func NewWebhook(cfg Config) (*Webhook, error) {
	return &Webhook{webhookjson.NewReceiver(Provider, true, cfg.Now)}, nil
}

// Verify authenticates a delivery with conn's secret. A present webhook-signature header is
// checked as a Standard Webhooks signature and never falls back to X-Gitlab-Token: otherwise a
// request could carry a broken signature and a leaked token and pass on the weaker scheme.
// Then X-Gitlab-Instance, when sent, must be the connection's source URL.
// Errors: *ports.RejectedError of kind ErrUnauthenticated.
func (w *Webhook) Verify(req ports.Request, conn *ports.SourceConnection) error {
	secret, err := webhookjson.ConnectionSecret(conn, "GitLab")
	if err != nil {
		return err
	}
	if len(req.Headers.Values(headerSWSignature)) > 0 {
		err = w.verifySignature(req, secret)
	} else {
		err = verifyToken(req, secret)
	}
	if err != nil {
		return err
	}
	if instance := req.Headers.Get(headerInstance); instance != "" && !sameInstance(instance, conn.SourceServerURL) {
		return ports.Reject(ports.ErrUnauthenticated, reasonWrongInstance, "X-Gitlab-Instance is not the connection's source server")
	}
	return nil
}

// sameInstance compares the X-Gitlab-Instance header with the connection's source server URL
// in their canonical forms (provider.CanonicalServerURL; connections store theirs canonical).
func sameInstance(header, sourceServerURL string) bool {
	h, err := provider.CanonicalServerURL(header)
	if err != nil {
		return false
	}
	c, err := provider.CanonicalServerURL(sourceServerURL)
	if err != nil {
		c = strings.TrimRight(sourceServerURL, "/")
	}
	return h == c
}

// verifyToken compares digests of the token and the secret, so the comparison takes the same
// time whatever their lengths.
func verifyToken(req ports.Request, secret []byte) error {
	token := req.Headers.Get(headerToken)
	if token == "" {
		return ports.Reject(ports.ErrUnauthenticated, reasonMissingToken, headerToken+" is missing")
	}
	got, want := sha256.Sum256([]byte(token)), sha256.Sum256(secret)
	if !hmac.Equal(got[:], want[:]) {
		return ports.Reject(ports.ErrUnauthenticated, reasonBadToken, headerToken+" is not the connection's secret")
	}
	return nil
}

// verifySignature checks a Standard Webhooks signature: HMAC-SHA256 with the base64 key after
// "whsec_" over "webhook-id.webhook-timestamp.body"; the header lists space-separated
// "v1,<base64>" signatures (several during a key rotation) and any one may match.
func (w *Webhook) verifySignature(req ports.Request, secret []byte) error {
	key, err := signingKey(secret)
	if err != nil {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonNotConfigured, err.Error())
	}
	id, ts := req.Headers.Get(headerSWID), req.Headers.Get(headerSWTimestamp)
	if id == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, headerSWID+" is missing")
	}
	if err := w.CheckUnix(ts, time.Second, headerSWTimestamp+" is missing", headerSWTimestamp+" is not whole seconds"); err != nil {
		return err
	}
	want := webhookjson.Sign(key, []byte(id+"."+ts+"."), req.Body)
	candidates := 0
	for _, entry := range strings.Fields(strings.Join(req.Headers.Values(headerSWSignature), " ")) {
		version, encoded, ok := strings.Cut(entry, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			continue
		}
		candidates++
		if hmac.Equal(got, want) {
			return nil
		}
	}
	if candidates == 0 {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "no v1,<base64> signature")
	}
	return ports.Reject(ports.ErrUnauthenticated, contract.ReasonBadSignature, "no signature matches the body")
}

func signingKey(secret []byte) ([]byte, error) {
	encoded, ok := strings.CutPrefix(string(secret), signingKeyPrefix)
	if !ok {
		return nil, errors.New("the connection's secret is a token, not a whsec_ signing key")
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(key) == 0 {
		return nil, errors.New("the connection's signing key is not base64 after whsec_")
	}
	return key, nil
}

// VerifyHeaders implements contract.HeaderVerifier: every check of Verify but the body's
// signature runs on the headers, before the body is read.
func (w *Webhook) VerifyHeaders(headers http.Header, conn *ports.SourceConnection) error {
	return contract.VerifyHeadersOnly(w, headers, conn)
}

var _ contract.RejectionReasoner = Module{}

// GitLab's own refusal reasons.
const (
	reasonWrongInstance = "wrong-instance" // X-Gitlab-Instance is not the connection's source server
	reasonMissingToken  = "missing-token"  // no X-Gitlab-Token
	reasonBadToken      = "bad-token"      // X-Gitlab-Token is not the connection's secret
)

// RejectionReasons lists every reason the GitLab webhook refuses or drops a delivery with
// (webhook_rejected_total{provider="gitlab",reason}). specs/architecture checks that every
// reason the package's verifier and parser use is listed here.
func (Module) RejectionReasons() []string {
	return []string{
		contract.ReasonMissingConnection, contract.ReasonNotConfigured, reasonWrongInstance,
		reasonMissingToken, reasonBadToken, contract.ReasonMalformedSignature, contract.ReasonMissingTimestamp,
		contract.ReasonMalformedTimestamp, contract.ReasonStaleTimestamp, contract.ReasonBadSignature,
		contract.ReasonMissingEventType, contract.ReasonInvalidEventType, contract.ReasonInvalidPayload,
		contract.ReasonInvalidDeliveryID, DropNoProjectOrGroup,
	}
}
