package beacon

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// HeaderSignature is Beacon's signature header: "t=<unix seconds>,v1=<hex>".
const HeaderSignature = "Beacon-Signature"

// keptHeaderNames are stored with the row: only the User-Agent (the event type and delivery id
// are in the body). Never Beacon-Signature.
var keptHeaderNames = []string{"User-Agent"}

// Config is Beacon's receiving configuration; secrets are per connection.
type Config struct {
	// Now is the clock of the timestamp window (nil: time.Now).
	Now webhookjson.Clock
}

// Webhook verifies and parses deliveries on POST /webhooks/beacon/{connectionId}.
type Webhook struct{ now webhookjson.Clock }

var (
	_ contract.Webhook        = (*Webhook)(nil)
	_ contract.HeaderVerifier = (*Webhook)(nil)
)

// NewWebhook is the webhook of cfg.
func NewWebhook(cfg Config) *Webhook { return &Webhook{now: cfg.Now} }

func (w *Webhook) Provider() provider.Provider { return Provider }

// PerConnection is true: every connection has its own URL and secret.
func (w *Webhook) PerConnection() bool { return true }

// Verify checks "Beacon-Signature: t=<unix seconds>,v1=<hex>", the HMAC-SHA256 of "{t}.{body}"
// with the connection's secret, compared in constant time, and holds t to five minutes of now
// either way. It reads nothing of the body but its bytes. Errors: *ports.RejectedError of kind
// ErrUnauthenticated.
func (w *Webhook) Verify(req ports.Request, conn *ports.SourceConnection) error {
	secret, err := webhookjson.ConnectionSecret(conn, "Beacon")
	if err != nil {
		return err
	}
	header := req.Headers.Get(HeaderSignature)
	if header == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingSignature, HeaderSignature+" is missing")
	}
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case key == "t" && ts == "":
			ts = value
		case key == "v1" && sig == "":
			sig = value
		case key == "t" || key == "v1":
			return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "more than one "+key+"=")
		}
	}
	if ts == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingTimestamp, "signature without t=")
	}
	seconds, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedTimestamp, "t= is not whole seconds")
	}
	if err := w.now.CheckFresh(time.Unix(seconds, 0)); err != nil {
		return err
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedSignature, "no v1=<hex> signature")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
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

// Parse reads a verified Beacon delivery:
// {"id", "type", "incident": {"id", "title", "status", "updatedAt", "author": {…}, …}}.
// The delivery key is the envelope's id, the subject beacon:incident:<incident id>; every
// delivery goes to the connection's own workspace. Errors: *ports.RejectedError of kind
// ErrMalformed.
func (w *Webhook) Parse(req ports.Request, _ *ports.SourceConnection) (contract.Envelope, error) {
	body, err := webhookjson.Decode(req.Body)
	if err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	env := contract.Envelope{Headers: webhookjson.KeptHeaders(req.Headers, keptHeaderNames), Route: ports.RouteSpec{ConnectionWide: true}}
	id, _ := body.Str("id")
	switch {
	case id == "":
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonMissingDeliveryID, "envelope without id")
	case !webhookjson.ValidDeliveryID(id):
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidDeliveryID, "id is not a printable token of at most 200 bytes")
	}
	env.DeliveryKey = id
	event, _ := body.Str("type")
	switch {
	case event == "":
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonMissingEventType, "envelope without type")
	case !webhookjson.ValidEventType(event):
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidEventType, "type is not a printable token")
	}
	env.EventType = event
	_, env.Action, _ = strings.Cut(event, ".")
	incident, _ := body.Object("incident")
	incidentID, _ := incident.Str("id")
	if !webhookjson.ValidID(incidentID) {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "incident.id is not a Beacon id")
	}
	if env.Subject, err = inbox.NewSubject(Provider.Label(), "incident", incidentID); err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "subject: "+err.Error())
	}
	return env, nil
}
