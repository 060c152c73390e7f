package management

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
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
}

// CreateConnection creates an ACTIVE connection in the managed workspace. The kind's provider
// module validates the config and names its routing key.
// Errors: ports.ErrMalformed ("unknown-kind", "invalid-source-server-url", "invalid-config",
// "secret-required", "invalid-secret"); the installation conflict of ports.ConnectionStore.
func (s *Service) CreateConnection(ctx context.Context, m Managed, req ConnectionRequest) (ports.StoredConnection, error) {
	entry, ok := s.kinds[req.Kind]
	if !ok {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "unknown-kind", req.Kind)
	}
	if err := checkSourceServerURL(req.SourceServerURL); err != nil {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-source-server-url", err.Error())
	}
	config := req.Config
	if config == nil {
		config = map[string]any{}
	}
	sourceKey, err := entry.module.ValidateConfig(entry.kind, config)
	if err != nil {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-config", err.Error())
	}
	if entry.kind.RequiresSecret() && req.Secret == "" {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "secret-required", entry.kind.String())
	}
	if len(req.Secret) > maxSecretLength || !utf8.ValidString(req.Secret) {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-secret", "")
	}
	var seal func(int64) ([]byte, error)
	if req.Secret != "" {
		seal = func(id int64) ([]byte, error) {
			sealed, err := s.secrets.Seal(id, []byte(req.Secret))
			if err != nil {
				return nil, fmt.Errorf("seal connection secret: %w", err)
			}
			return sealed, nil
		}
	}
	c, err := s.connections.CreateConnection(ctx, ports.NewConnection{
		WorkspaceID:     m.ws.ID,
		Kind:            entry.kind,
		SourceServerURL: req.SourceServerURL,
		Config:          config,
		SourceKey:       sourceKey,
		SealSecret:      seal,
	})
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("create %s connection: %w", entry.kind, err)
	}
	return c, nil
}

// checkSourceServerURL wants an absolute http(s) URL without credentials: it is copied into
// every stored row's Hephaestus-Source-Server-Url header, where a password must never go.
func checkSourceServerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("parse source server url: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("source server url %q is not an absolute http(s) URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("source server url must not carry credentials, a query or a fragment")
	}
	return nil
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

// Transition applies a lifecycle action to a connection of the managed workspace under its
// lifecycle lock; the domain state machine decides on the state read under that lock.
// Errors: ports.ErrNotFound; connection.ErrForbiddenTransition; the installation conflict of
// ports.ConnectionStore when a reactivated App collides with a live one.
func (s *Service) Transition(ctx context.Context, m Managed, id int64, action connection.Action) (ports.StoredConnection, error) {
	c, err := s.connections.Transition(ctx, m.ws.ID, id, func(current connection.State) (connection.State, error) {
		return current.Next(action)
	})
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("%s connection %d: %w", action, id, err)
	}
	return c, nil
}

// SetSubscriptions replaces the resources the managed workspace monitors through a connection.
// Resource types must be among the provider module's ResourceTypes.
// Errors: ports.ErrNotFound; ports.ErrMalformed ("unknown-resource-type", "invalid-resource",
// "duplicate-resource"); ports.ErrConflict ("unknown-provider") for a connection whose
// provider module is no longer wired.
func (s *Service) SetSubscriptions(ctx context.Context, m Managed, id int64, resources []ports.SubscribedResource) ([]ports.SubscribedResource, error) {
	c, err := s.connections.Connection(ctx, m.ws.ID, id)
	if err != nil {
		return nil, fmt.Errorf("connection %d: %w", id, err)
	}
	entry, ok := s.kinds[c.Kind.String()]
	if !ok {
		return nil, ports.Reject(ports.ErrConflict, "unknown-provider", c.Kind.String())
	}
	types := entry.module.ResourceTypes()
	seen := make(map[[2]string]bool, len(resources))
	for _, r := range resources {
		if !slices.Contains(types, r.Type) {
			return nil, ports.Reject(ports.ErrMalformed, "unknown-resource-type", r.Type)
		}
		if r.ID == "" || len(r.ID) > maxResourceIDLength || len(r.Name) > maxResourceNameLen ||
			!utf8.ValidString(r.ID) || !utf8.ValidString(r.Name) {
			return nil, ports.Reject(ports.ErrMalformed, "invalid-resource", r.Type)
		}
		key := [2]string{r.Type, r.ID}
		if seen[key] {
			return nil, ports.Reject(ports.ErrMalformed, "duplicate-resource", r.Type+"/"+r.ID)
		}
		seen[key] = true
	}
	set, err := s.connections.ReplaceSubscriptions(ctx, m.ws.ID, id, resources)
	if err != nil {
		return nil, fmt.Errorf("replace subscriptions of connection %d: %w", id, err)
	}
	return set, nil
}
