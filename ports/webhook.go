package ports

import (
	"errors"
	"net/http"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// Request is a raw webhook request: the body is read once, under the size limit, before
// anything else happens. ConnectionID is the URL's connection (0 where the provider posts to
// one URL for all connections).
type Request struct {
	Headers      http.Header
	Body         []byte
	ConnectionID int64
	ReceivedAt   time.Time
	// TraceParent is the W3C traceparent of the server's own request span ("" when not
	// traced), never a header the provider sent; admission stores it with every row.
	TraceParent string
}

// SourceConnection is a per-connection provider's connection as the verifier needs it. Secret
// is the decrypted secret; it must never be logged or stored anywhere else.
type SourceConnection struct {
	ID              int64
	WorkspaceID     int64
	Kind            connection.Kind
	State           connection.State
	SourceServerURL string
	Config          map[string]any
	Secret          []byte
	// ConfigVersion is the connection's config_version when it was read: admission refuses the
	// delivery (route-changed, retried) when the route it locks has another version, because the
	// delivery was verified against a configuration that is no longer current.
	ConfigVersion int64
}

// Verifier authenticates a raw request before anything is parsed. conn is the URL's connection
// for per-connection providers and nil otherwise (their secret is app-level configuration).
// Secrets are compared in constant time. Errors: *RejectedError of kind ErrUnauthenticated
// (missing or wrong signature, stale timestamp); the reason names which, the response does not.
type Verifier interface {
	Verify(req Request, conn *SourceConnection) error
}

// Resource is something a workspace can subscribe to: "repository"/"123", "group"/"42",
// "channel"/"C123", "collection"/"uuid".
type Resource struct {
	Type string
	ID   string
}

// RouteSpec tells admission where a verified delivery may go. The provider adapter fills it;
// admission reads the matching routes (ProviderEventSubscriptions) in its transaction.
type RouteSpec struct {
	// SourceKey names the source connection(s) by their routing key (a GitHub App's installation
	// id, a Slack team id) of kind SourceKind. Empty for per-connection providers.
	SourceKind string
	SourceKey  string
	// Resources a subscription may match (the repository and its organization, …).
	Resources []Resource
	// ConnectionWide: the source connections' own workspaces receive the delivery whatever
	// they subscribe to (Slack team-wide events, Outline connection-wide events).
	ConnectionWide bool
	// RecipientsAnyConnection: VERIFIED subscriptions of ACTIVE connections of the provider's
	// other kinds, in any workspace, receive the delivery too (GitHub: PAT workspaces receive
	// through the App source while their token's access is verified). A connection of
	// SourceKind receives only as a source: another installation's App connection never
	// receives this one's deliveries. Otherwise only subscriptions of the source
	// connection(s) count.
	RecipientsAnyConnection bool
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
	Route   RouteSpec
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
	Parse(req Request, conn *SourceConnection) (Envelope, error)
}

// SubjectKeyDeriver owns a provider's subject and delivery key: the delivery key from the
// provider's idempotency header or body, the subject from stable resource ids (never names).
type SubjectKeyDeriver interface {
	DeliveryKey(req Request, body map[string]any) (string, error)
	Subject(eventType string, body map[string]any) (inbox.Subject, error)
}

// HeaderVerifier is what a provider's verifier can decide from the request's headers alone,
// before the body is read (admission.Service.Open): its secret is configured, the signature
// headers are present and well formed, a token that is compared as it is (GitLab's
// X-Gitlab-Token) matches. Verify still checks everything once the body is read. A provider
// that does not implement it has its requests' bodies read before any verification.
// Errors: *RejectedError of kind ErrUnauthenticated, with Verify's reasons.
type HeaderVerifier interface {
	VerifyHeaders(headers http.Header, conn *SourceConnection) error
}

// VerifyHeadersOnly is HeaderVerifier for a verifier whose checks of the headers all come
// before its check of the body's signature: v runs on the headers with an empty body, and
// only ReasonBadSignature (the signature does not match the body, which is not read yet) is
// left for Verify to decide. Errors: v's other refusals.
func VerifyHeadersOnly(v Verifier, headers http.Header, conn *SourceConnection) error {
	err := v.Verify(Request{Headers: headers}, conn)
	var rej *RejectedError
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
