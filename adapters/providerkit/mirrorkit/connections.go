package mirrorkit

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// ConnectionStatePublisher publishes connection.state_changed for a connection whose state tx
// has just changed (the management connection store).
type ConnectionStatePublisher interface {
	PublishConnectionState(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error
}

// ConnectionStates is the connection-state publisher of a mirror store whose handlers move a
// connection through its states. The zero value publishes nothing.
type ConnectionStates struct {
	publisher ConnectionStatePublisher
}

// Set makes c publish through p. Errors: a nil p.
func (c *ConnectionStates) Set(p ConnectionStatePublisher) error {
	if p == nil {
		return errors.New("mirror store: nil connection state publisher")
	}
	c.publisher = p
	return nil
}

// Changed publishes, in tx, connection.state_changed for connectionID of workspace ws, whose
// state tx has just changed (a handler sets a state only when the state machine moved it, so
// each call is a change). Nothing without a publisher.
func (c ConnectionStates) Changed(ctx context.Context, tx ports.Tx, ws, connectionID int64) error {
	if c.publisher == nil {
		return nil
	}
	return c.publisher.PublishConnectionState(ctx, tx, ws, connectionID)
}
