package ports

import (
	"context"
	"encoding/json"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Route is one candidate connection as admission read it: a source connection or a recipient
// through a subscription (or both). ConfigVersion is compared again under the lifecycle lock.
type Route struct {
	ConnectionID    int64
	WorkspaceID     int64
	Kind            string
	State           connection.State
	ConfigVersion   int64
	SourceServerURL string
	Source          bool // the connection the delivery came through
	Recipient       bool // it (or its workspace, connection-wide) receives the delivery
}

// LockedConnection is a connection's state read again under its lifecycle lock.
type LockedConnection struct {
	ConnectionID  int64
	State         connection.State
	ConfigVersion int64
	Exists        bool
}

// NewRow is one row to store: the domain delivery and what is stored beside it.
type NewRow struct {
	Delivery     inbox.Delivery
	ConnectionID int64
	Payload      json.RawMessage
	Headers      map[string]string
	// TraceParent is the W3C traceparent of the request span that admitted the row ("" when
	// nothing is traced): stored with the row, each attempt's span is its child.
	TraceParent string
}

// AdmissionTx is the admission transaction (READ COMMITTED). All calls run in it.
type AdmissionTx interface {
	// Routes reads ProviderEventSubscriptions for spec: the source connections and every
	// recipient, whatever their state (admission decides). sourceConnectionID is the URL's
	// connection for per-connection providers (0 otherwise). A store may answer with routes it
	// remembers, provided Insert then stores nothing unless they are still current (see
	// AdmissionStore).
	Routes(ctx context.Context, spec RouteSpec, provider string, sourceConnectionID int64) ([]Route, error)
	// LockConnections takes the connections' scoped lifecycle lock (FOR SHARE: admissions run
	// side by side, a suspension's FOR UPDATE waits for them and they wait for it) in
	// connection-id order across workspaces, and reads their state again.
	LockConnections(ctx context.Context, ids []int64) ([]LockedConnection, error)
	// Insert stores the rows with INSERT … ON CONFLICT DO NOTHING on uq_provider_event_delivery;
	// stored[i] is false for a duplicate. Insert is the admission's last statement: the store
	// may commit the transaction in the same round trip, so fn must not fail after it succeeded.
	Insert(ctx context.Context, rows []NewRow) (stored []bool, err error)
}

// AdmissionStore runs one admission transaction: fn's work commits together or not at all (a
// store may commit it in one transaction with other deliveries' work; each fn's rows are
// still stored all or none, and Admit returns after the commit).
// A store may run fn more than once, each run in a new transaction of which at most one
// commits (a run on routes it remembered stores nothing unless they were current, and fn then
// runs on routes read again), so fn starts from nothing each time and its results are read
// after Admit returns. Errors: fn's error (rolled back), or *inbox.TransientError wrapping a
// database failure.
type AdmissionStore interface {
	Admit(ctx context.Context, fn func(ctx context.Context, tx AdmissionTx) error) error
}

// ConnectionDirectory finds a per-connection provider's connection for verification, with its
// secret decrypted. Errors: ErrNotFound.
type ConnectionDirectory interface {
	SourceConnection(ctx context.Context, id int64) (*SourceConnection, error)
}
