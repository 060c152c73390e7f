package management

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Bounds of what a caller may store; a secret or an id beyond them is a mistake, not data.
const (
	maxSecretLength     = 4096
	maxResourceIDLength = 255
	maxResourceNameLen  = 512
)

// ConnectionRequest is a connection to create, as the caller wrote it.
type ConnectionRequest struct {
	Kind            string
	SourceServerURL string
	Config          map[string]any
	// Secret is the connection's own webhook secret (a GitLab token or whsec_ signing key, an
	// Outline signing secret). It is sealed before it is stored and never shown again.
	Secret string
	// APIToken is the provider API token of a kind that accepts one (an Outline API key),
	// which the connection's sync jobs read with; sealed like Secret, never shown again.
	APIToken string
}

// ReasonAPITokenUnsupported refuses an API token for a kind that has no use for one.
const ReasonAPITokenUnsupported = "api-token-unsupported"

// ReasonInstallFlowRequired refuses a workspace ADMIN who creates a shared-URL connection
// (GITHUB_APP, SLACK) directly: only the provider's install flow, or the instance
// administrator, may bind a workspace to an installation or a team.
const ReasonInstallFlowRequired = "install-flow-required"

// CreateConnection creates an ACTIVE connection in the managed workspace. The kind's provider
// module validates the config and names its routing key.
//
// A kind with a routing key and no URL of its own (GITHUB_APP, SLACK) receives the deliveries
// that the provider posts to one URL for every tenant, chosen by that key: whoever creates
// the connection claims the key's data. Only the instance administrator may create one
// directly; a workspace ADMIN goes through the provider's install flow, which proves with the
// provider that the installation or team is theirs.
// Errors: ports.ErrForbidden ("install-flow-required"); ports.ErrMalformed ("unknown-kind",
// "invalid-source-server-url", "invalid-config", "secret-required", "invalid-secret",
// "api-token-unsupported", "invalid-api-token"); the source conflicts of ports.ConnectionStore.
func (s *Service) CreateConnection(ctx context.Context, m Managed, req ConnectionRequest) (ports.StoredConnection, error) {
	entry, ok := s.kinds[req.Kind]
	if !ok {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "unknown-kind", req.Kind)
	}
	// Stored canonical: admission copies it into every row's Hephaestus-Source-Server-Url
	// header, and erasure and the install flows compare that one spelling.
	sourceServerURL, err := provider.CanonicalServerURL(req.SourceServerURL)
	if err != nil {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-source-server-url", err.Error())
	}
	config := configOrEmpty(req.Config)
	sourceKey, err := entry.module.ValidateConfig(entry.kind, config)
	if err != nil {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-config", err.Error())
	}
	if bindsSharedSource(entry.kind, sourceKey) && !m.by.InstanceAdmin {
		return ports.StoredConnection{}, ports.Reject(ports.ErrForbidden, ReasonInstallFlowRequired, entry.kind.String())
	}
	if entry.kind.RequiresSecret() && req.Secret == "" {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "secret-required", entry.kind.String())
	}
	if !validSecret(req.Secret) {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-secret", "")
	}
	if req.APIToken != "" && !entry.kind.AcceptsAPIToken() {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, ReasonAPITokenUnsupported, entry.kind.String())
	}
	if !validSecret(req.APIToken) {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-api-token", "")
	}
	seal, sealToken := s.sealer(req.Secret, "connection secret"), s.sealer(req.APIToken, "connection api token")
	c, err := s.connections.CreateConnection(ctx, ports.NewConnection{
		WorkspaceID:     m.ws.ID,
		Kind:            entry.kind,
		SourceServerURL: sourceServerURL,
		Config:          config,
		SourceKey:       sourceKey,
		SealSecret:      seal,
		SealAPIToken:    sealToken,
	})
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("create %s connection: %w", entry.kind, err)
	}
	return c, nil
}

// sealer seals value for the id the store gives a new connection; nil for an empty value.
func (s *Service) sealer(value, what string) func(int64) ([]byte, error) {
	if value == "" {
		return nil
	}
	return func(id int64) ([]byte, error) {
		sealed, err := s.secrets.Seal(id, []byte(value))
		if err != nil {
			return nil, fmt.Errorf("seal %s: %w", what, err)
		}
		return sealed, nil
	}
}

// WebhookURL is the path a per-connection provider posts to ("/webhooks/gitlab/3"), or "" for
// a kind whose deliveries arrive on the provider's shared URL.
func WebhookURL(c ports.StoredConnection) string {
	if !c.Kind.HasWebhookURL() {
		return ""
	}
	return "/webhooks/" + c.Kind.Provider().Label() + "/" + strconv.FormatInt(c.ID, 10)
}

// ListConnections pages the managed workspace's connections (never a secret).
func (s *Service) ListConnections(ctx context.Context, m Managed, page ports.PageRequest) ([]ports.StoredConnection, int, error) {
	items, total, err := s.connections.ListConnections(ctx, m.ws.ID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list connections: %w", err)
	}
	return items, total, nil
}

// bindsSharedSource: a connection of kind with routingKey receives what the provider posts to
// its one URL for every tenant under that key (GITHUB_APP's installation, SLACK's team), so
// binding it to a workspace claims that key's data.
func bindsSharedSource(kind connection.Kind, routingKey string) bool {
	return routingKey != "" && !kind.HasWebhookURL()
}

// Transition applies a lifecycle action to a connection of the managed workspace under its
// lifecycle lock; the domain state machine decides on the state read under that lock.
//
// A shared-URL connection (GITHUB_APP, SLACK) leaves UNINSTALLED only through its install
// flow (which creates a new connection after the provider vouched for it) or the instance
// administrator: activating it binds the workspace to the installation or team again, which
// is what creating it directly would do (install-flow-required there too). Suspending and
// uninstalling stay the workspace ADMIN's.
// Errors: ports.ErrNotFound; ports.ErrForbidden ("install-flow-required");
// connection.ErrForbiddenTransition; the installation conflict of ports.ConnectionStore when a
// reactivated App collides with a live one.
func (s *Service) Transition(ctx context.Context, m Managed, id int64, action connection.Action) (ports.StoredConnection, error) {
	shared := false
	if action == connection.Activate && !m.by.InstanceAdmin {
		// The kind and config of a connection never change: read outside the lock, decided
		// with the state read under it.
		stored, err := s.connections.Connection(ctx, m.ws.ID, id)
		if err != nil {
			return ports.StoredConnection{}, fmt.Errorf("%s connection %d: %w", action, id, err)
		}
		shared = s.sharedSource(stored)
	}
	c, err := s.connections.Transition(ctx, m.ws.ID, id, func(current connection.State) (connection.State, error) {
		if shared && current == connection.Uninstalled {
			return connection.State{}, ports.Reject(ports.ErrForbidden, ReasonInstallFlowRequired, "activate an uninstalled shared-URL connection")
		}
		return current.Next(action)
	})
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("%s connection %d: %w", action, id, err)
	}
	return c, nil
}

// InstallFlowRequired reports whether m's principal would be refused action on c with
// install-flow-required (activating an UNINSTALLED shared-URL connection without being the
// instance administrator), so that a page offers no button that cannot work. Transition
// decides again under the lock.
func (s *Service) InstallFlowRequired(m Managed, c ports.StoredConnection, action connection.Action) bool {
	return action == connection.Activate && c.State == connection.Uninstalled && !m.by.InstanceAdmin && s.sharedSource(c)
}

// sharedSource reports whether c binds its workspace to a shared-URL source (bindsSharedSource);
// a connection whose provider module is no longer wired counts as one when its kind has no URL
// of its own, so an unknown module never opens the way back.
func (s *Service) sharedSource(c ports.StoredConnection) bool {
	entry, ok := s.kinds[c.Kind.String()]
	if !ok {
		return !c.Kind.HasWebhookURL()
	}
	key, err := entry.module.ValidateConfig(entry.kind, configOrEmpty(c.Config))
	if err != nil {
		return !c.Kind.HasWebhookURL()
	}
	return bindsSharedSource(entry.kind, key)
}

// configOrEmpty is config, or an empty one for none: a module validates a map, never nil.
func configOrEmpty(config map[string]any) map[string]any {
	if config == nil {
		return map[string]any{}
	}
	return config
}

// validSecret reports whether a secret or API token is within what a caller may store (at most
// maxSecretLength bytes of UTF-8).
func validSecret(value string) bool {
	return len(value) <= maxSecretLength && utf8.ValidString(value)
}
