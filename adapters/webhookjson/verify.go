package webhookjson

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Webhook is what a provider's Webhook implements: the contract's webhook, whose every check
// but the body's signature also runs on the headers alone (contract.VerifyHeadersOnly).
type Webhook interface {
	contract.Webhook
	contract.HeaderVerifier
}

// Receiver is what every provider's Webhook is besides its Verify and Parse: its provider,
// whether its deliveries are verified with their connection's secret (PerConnection), and the
// clock of its signed timestamps' window. A provider's Webhook embeds it.
type Receiver struct {
	provider      provider.Provider
	perConnection bool
	now           Clock
}

// NewReceiver is the Receiver of p's webhook; now is the clock of its timestamp window (nil:
// time.Now).
func NewReceiver(p provider.Provider, perConnection bool, now Clock) Receiver {
	return Receiver{provider: p, perConnection: perConnection, now: now}
}

// Provider implements contract.Webhook.
func (r Receiver) Provider() provider.Provider { return r.provider }

// PerConnection implements contract.Webhook: true when every connection has its own URL and
// secret.
func (r Receiver) PerConnection() bool { return r.perConnection }

// CheckUnix reads a signed timestamp ts, whole seconds since the epoch, or whole milliseconds
// when unit is time.Millisecond, and refuses it when it is not within TimestampWindow of the Receiver's now. missing
// and malformed are the refusals' details. Errors: *ports.RejectedError of kind
// ErrUnauthenticated (missing-timestamp, malformed-timestamp, stale-timestamp).
func (r Receiver) CheckUnix(ts string, unit time.Duration, missing, malformed string) error {
	if ts == "" {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingTimestamp, missing)
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonMalformedTimestamp, malformed)
	}
	signed := time.Unix(n, 0)
	if unit == time.Millisecond {
		signed = time.UnixMilli(n)
	}
	return r.now.CheckFresh(signed)
}

// Sign is the HMAC-SHA256 with key of the concatenation of parts (a signed prefix, the body).
func Sign(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

// HexDigest reads a hex-encoded SHA-256 digest; false for anything else.
func HexDigest(s string) ([]byte, bool) {
	got, err := hex.DecodeString(s)
	return got, err == nil && len(got) == sha256.Size
}

// TimestampWindow is how far from now, either way, a signed timestamp may be: a captured request
// cannot be replayed later.
const TimestampWindow = 5 * time.Minute

// Clock is the clock of a webhook's timestamp window (a webhook Config's Now); nil is time.Now.
type Clock func() time.Time

// CheckFresh refuses a signed time more than TimestampWindow from c's now, either way.
// Errors: *ports.RejectedError of kind ErrUnauthenticated (stale-timestamp).
func (c Clock) CheckFresh(signed time.Time) error {
	now := c
	if now == nil {
		now = time.Now
	}
	if age := now().Sub(signed); age > TimestampWindow || age < -TimestampWindow {
		return ports.Reject(ports.ErrUnauthenticated, contract.ReasonStaleTimestamp, "timestamp is more than 5 minutes from now")
	}
	return nil
}

// ConnectionSecret is the secret a per-connection delivery is verified with; provider names
// the deliveries in the refusal's detail. Errors: *ports.RejectedError of kind
// ErrUnauthenticated: missing-connection without conn, not-configured when it has no secret.
func ConnectionSecret(conn *ports.SourceConnection, provider string) ([]byte, error) {
	if conn == nil {
		return nil, ports.Reject(ports.ErrUnauthenticated, contract.ReasonMissingConnection, provider+" deliveries are verified with their connection's secret")
	}
	if len(conn.Secret) == 0 {
		return nil, ports.Reject(ports.ErrUnauthenticated, contract.ReasonNotConfigured, "the connection has no secret")
	}
	return conn.Secret, nil
}
