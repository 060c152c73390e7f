package webhookjson

import (
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

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
