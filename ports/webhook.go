package ports

import (
	"net/http"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
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
