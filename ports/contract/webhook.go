package contract

import (
	"errors"
	"net/http"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Verifier authenticates a raw request before anything is parsed. conn is the URL's connection
// for per-connection providers and nil otherwise (their secret is app-level configuration).
// Secrets are compared in constant time. Errors: *RejectedError of kind ErrUnauthenticated
// (missing or wrong signature, stale timestamp); the reason names which, the response does not.
type Verifier interface {
	Verify(req ports.Request, conn *ports.SourceConnection) error
}

// Immediate is an answer a provider expects without anything being stored (GitHub ping,
// Slack url_verification).
type Immediate struct {
	Status      int
	ContentType string
	Body        []byte
}

// Envelope is a parsed, verified delivery.
type Envelope struct {
	EventType   string // "issues", "Merge Request Hook", "message", "documents.update"
	Action      string // provider action, for logs only
	DeliveryKey string
	Subject     inbox.Subject
	// Control: an installation control event. Stored once with a NULL workspace in the system
	// scope (its handler can create or repair a connection). Its Route names only the source.
	Control bool
	Route   ports.RouteSpec
	// Headers of the provider (event and delivery headers) to keep with the row. The adapter
	// never lists a signature, token or cookie header here.
	Headers map[string]string
	// Payload, when set, is stored instead of the request's body: the body less the members
	// that are credentials (Slack's verification token), which the adapter removes after the
	// signature over the raw body was verified. Nil stores the body as received.
	Payload []byte
	// Immediate, when set, is answered at once and nothing is stored.
	Immediate *Immediate
	// DropReason, when set, means verified but dropped by a provider rule (stored nowhere,
	// counted as a rejection with this reason, answered 202 "dropped").
	DropReason string
}

// EnvelopeParser reads a verified body. The body is already known to be UTF-8 JSON without
// NUL. Errors: *RejectedError of kind ErrMalformed (e.g. reason "invalid-event-route" for a
// signed work payload relabeled as a control event, "invalid-payload" for a shape it cannot use).
type EnvelopeParser interface {
	Parse(req ports.Request, conn *ports.SourceConnection) (Envelope, error)
}

// SubjectKeyDeriver owns a provider's subject and delivery key: the delivery key from the
// provider's idempotency header or body, the subject from stable resource ids (never names).
type SubjectKeyDeriver interface {
	DeliveryKey(req ports.Request, body map[string]any) (string, error)
	Subject(eventType string, body map[string]any) (inbox.Subject, error)
}

// HeaderVerifier is what a provider's verifier can decide from the request's headers alone,
// before the body is read (admission.Service.Open): its secret is configured, the signature
// headers are present and well formed, a token that is compared as it is (GitLab's
// X-Gitlab-Token) matches. Verify still checks everything once the body is read. A provider
// that does not implement it has its requests' bodies read before any verification.
// Errors: *RejectedError of kind ErrUnauthenticated, with Verify's reasons.
type HeaderVerifier interface {
	VerifyHeaders(headers http.Header, conn *ports.SourceConnection) error
}

// VerifyHeadersOnly is HeaderVerifier for a verifier whose checks of the headers all come
// before its check of the body's signature: v runs on the headers with an empty body, and
// only ReasonBadSignature (the signature does not match the body, which is not read yet) is
// left for Verify to decide. Errors: v's other refusals.
func VerifyHeadersOnly(v Verifier, headers http.Header, conn *ports.SourceConnection) error {
	err := v.Verify(ports.Request{Headers: headers}, conn)
	var rej *ports.RejectedError
	if errors.As(err, &rej) && rej.Reason == ReasonBadSignature {
		return nil
	}
	return err
}

// Webhook is one provider's receiving side, wired at startup by Wire.
type Webhook interface {
	Provider() provider.Provider
	// PerConnection: deliveries arrive on /webhooks/<provider>/{connectionId} and are verified
	// with that connection's secret.
	PerConnection() bool
	Verifier
	EnvelopeParser
}

// ProviderModule is everything a provider adapter contributes besides its webhook: its
// connection kinds, how a connection's config is validated, and its handlers.
type ProviderModule interface {
	Provider() provider.Provider
	Kinds() []connection.Kind
	// ValidateConfig checks a connection's config for kind and returns its routing key (the
	// RouteSpec.SourceKey the webhook will name; "" for per-connection kinds). Errors: ErrMalformed.
	ValidateConfig(kind connection.Kind, config map[string]any) (sourceKey string, err error)
	// ResourceTypes lists the subscription resource types of the provider.
	ResourceTypes() []string
}

// Refusal reasons the providers' verifiers and parsers share (webhook_rejected_total{reason}).
// A provider adapter uses these constants, or its own, in every *RejectedError and DropReason
// of its webhook, and lists them all in RejectionReasons, from which the metric's label values
// are exported at 0 from start.
const (
	ReasonNotConfigured      = "not-configured"      // the secret to verify with is not set
	ReasonMissingConnection  = "missing-connection"  // a per-connection delivery without its connection
	ReasonMissingSignature   = "missing-signature"   // no signature header
	ReasonMalformedSignature = "malformed-signature" // a signature header of the wrong form
	ReasonBadSignature       = "bad-signature"       // the signature does not match the body
	ReasonMissingTimestamp   = "missing-timestamp"   // a signed timestamp is missing
	ReasonMalformedTimestamp = "malformed-timestamp" // a signed timestamp of the wrong form
	ReasonStaleTimestamp     = "stale-timestamp"     // more than 5 minutes from now
	ReasonMissingEventType   = "missing-event-type"  // no event type
	ReasonInvalidEventType   = "invalid-event-type"  // an event type that is not a printable token
	ReasonInvalidPayload     = "invalid-payload"     // a body of a shape the provider cannot use
	ReasonMissingDeliveryID  = "missing-delivery-id" // no delivery id
	ReasonInvalidDeliveryID  = "invalid-delivery-id" // a delivery id that is not a short printable token
)

// RejectionReasoner is implemented by a ProviderModule to declare every reason its webhook can
// refuse or drop a delivery with, so webhook_rejected_total exports each at 0 from start.
type RejectionReasoner interface {
	RejectionReasons() []string
}
