package management

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
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
	config := req.Config
	if config == nil {
		config = map[string]any{}
	}
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
	if len(req.Secret) > maxSecretLength || !utf8.ValidString(req.Secret) {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-secret", "")
	}
	if req.APIToken != "" && !entry.kind.AcceptsAPIToken() {
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, ReasonAPITokenUnsupported, entry.kind.String())
	}
	if len(req.APIToken) > maxSecretLength || !utf8.ValidString(req.APIToken) {
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
	config := c.Config
	if config == nil {
		config = map[string]any{}
	}
	key, err := entry.module.ValidateConfig(entry.kind, config)
	if err != nil {
		return !c.Kind.HasWebhookURL()
	}
	return bindsSharedSource(entry.kind, key)
}

// SetSubscriptions replaces the resources the managed workspace monitors through a connection.
// Resource types must be among the provider module's ResourceTypes, and ids of the shape its
// ResourceValidator wants.
//
// A connection whose kind has an access checker (GITHUB_PAT) subscribes only to what its own
// credential can read: every resource is checked with the provider before anything is
// stored, outside any database transaction (a slow provider holds no lock), and the set is
// stored VERIFIED only when every check admitted. Other kinds' subscriptions are VERIFIED
// because their source vouches at admission (an App receives only its installation's
// deliveries).
// Errors: ports.ErrNotFound; ports.ErrMalformed ("unknown-resource-type", "invalid-resource",
// "duplicate-resource", "unsupported-resource", "secret-required"); ports.ErrForbidden
// ("resource-not-accessible"); ports.ErrUnavailable ("provider-unavailable": no answer,
// retry); ports.ErrConflict ("unknown-provider") for a connection whose provider module is no
// longer wired.
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
		if v, ok := entry.module.(ports.ResourceValidator); ok {
			if err := v.ValidateResource(ports.Resource{Type: r.Type, ID: r.ID}); err != nil {
				return nil, ports.Reject(ports.ErrMalformed, "invalid-resource", err.Error())
			}
		}
		key := [2]string{r.Type, r.ID}
		if seen[key] {
			return nil, ports.Reject(ports.ErrMalformed, "duplicate-resource", r.Type+"/"+r.ID)
		}
		seen[key] = true
	}
	resources, err = s.verifyAccess(ctx, m, c, resources)
	if err != nil {
		return nil, err
	}
	set, err := s.connections.ReplaceSubscriptions(ctx, m.ws.ID, id, resources)
	if err != nil {
		return nil, fmt.Errorf("replace subscriptions of connection %d: %w", id, err)
	}
	return set, nil
}

// maxConcurrentAccessChecks bounds the provider calls one subscription change makes at once.
const maxConcurrentAccessChecks = 4

// ReasonProviderUnavailable is a 503 (retry): the provider gave no usable answer to a check.
const ReasonProviderUnavailable = "provider-unavailable"

// verifyAccess checks every resource with c's own credential when c's kind has an access
// checker, and returns the resources with the access to store. It runs before the
// subscription transaction and outside any: the provider's answer decides whether the
// transaction runs at all.
func (s *Service) verifyAccess(ctx context.Context, m Managed, c ports.StoredConnection, resources []ports.SubscribedResource) ([]ports.SubscribedResource, error) {
	out := make([]ports.SubscribedResource, len(resources))
	checker, checked := s.checkers[c.Kind.String()]
	for i, r := range resources {
		out[i] = ports.SubscribedResource{Type: r.Type, ID: r.ID, Name: r.Name, Access: connection.Verified}
		if checked && !slices.Contains(checker.ResourceTypes(), r.Type) {
			return nil, ports.Reject(ports.ErrMalformed, "unsupported-resource", c.Kind.String()+" cannot subscribe to "+r.Type)
		}
	}
	if !checked || len(out) == 0 {
		return out, nil
	}
	sealed, err := s.connections.SealedSecret(ctx, m.ws.ID, c.ID)
	if err != nil {
		return nil, fmt.Errorf("secret of connection %d: %w", c.ID, err)
	}
	if sealed == nil {
		return nil, ports.Reject(ports.ErrMalformed, "secret-required", c.Kind.String()+" has no token to check access with")
	}
	credential, err := s.secrets.Open(c.ID, sealed)
	if err != nil {
		return nil, fmt.Errorf("open secret of connection %d: %w", c.ID, err)
	}
	defer clear(credential)

	errs := checkEach(ctx, checker, credential, out)
	checkedAt := s.now().UTC()
	for i, err := range errs {
		var rej *ports.RejectedError
		switch {
		case err == nil:
			out[i].AccessCheckedAt = &checkedAt
		case errors.As(err, &rej) && errors.Is(err, ports.ErrForbidden):
			return nil, ports.Reject(ports.ErrForbidden, ports.ReasonResourceNotAccessible,
				fmt.Sprintf("%s %s: %s", out[i].Type, out[i].ID, rej.Detail))
		case errors.Is(err, ports.ErrMalformed):
			return nil, ports.Reject(ports.ErrMalformed, "invalid-resource", err.Error())
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			return nil, &ports.RejectedError{Kind: ports.ErrUnavailable, Reason: ReasonProviderUnavailable,
				Detail: fmt.Sprintf("%s %s: %v", out[i].Type, out[i].ID, err)}
		}
	}
	return out, nil
}

// Subscriptions reads the resources the managed workspace monitors through a connection,
// with their access. Errors: ports.ErrNotFound.
func (s *Service) Subscriptions(ctx context.Context, m Managed, id int64) ([]ports.SubscribedResource, error) {
	set, err := s.connections.Subscriptions(ctx, m.ws.ID, id)
	if err != nil {
		return nil, fmt.Errorf("subscriptions of connection %d: %w", id, err)
	}
	return set, nil
}

// ConnectionAccess is what a connection of a kind with an access checker shows as its access:
// UNVERIFIED with reason "token-missing" when it has no credential (it receives nothing),
// VERIFIED otherwise (each subscription then shows its own access). Empty for other kinds.
func (s *Service) ConnectionAccess(c ports.StoredConnection) (access connection.Access, reason string) {
	if _, checked := s.checkers[c.Kind.String()]; !checked {
		return connection.Access{}, ""
	}
	if !c.HasSecret {
		return connection.Unverified, ReasonTokenMissing
	}
	return connection.Verified, ""
}

// ReasonTokenMissing is the access reason of a connection, and of its subscriptions, that
// has no credential to check access with.
const ReasonTokenMissing = "token-missing"

// checkEach checks every resource with credential, at most maxConcurrentAccessChecks at once,
// and returns each check's error.
func checkEach(ctx context.Context, checker ports.ResourceAccessChecker, credential []byte, resources []ports.SubscribedResource) []error {
	errs := make([]error, len(resources))
	sem := make(chan struct{}, maxConcurrentAccessChecks)
	var wg sync.WaitGroup
	for i := range resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = checker.CheckAccess(ctx, credential, ports.Resource{Type: resources[i].Type, ID: resources[i].ID})
		}()
	}
	wg.Wait()
	return errs
}

// ReasonTokenChanged is the access reason of a subscription set while its connection's token
// was being replaced: it was checked with the old token, so the recheck checks it again.
const ReasonTokenChanged = "token-changed"

// ReplaceSecret sets a connection's secret (a GitLab token or signing key, an Outline signing
// secret, a PAT), for kinds that carry one. Its config_version moves, so a delivery verified
// with the old secret while the change commits is answered 503 and retried.
//
// For a kind with an access checker (GITHUB_PAT) every current subscription is checked with
// the new token first, outside any transaction, and stored with its verdict in the same
// transaction as the token: VERIFIED, or REVOKED with the provider's cause. This is how a PAT
// connection without a token (migration 00010: UNVERIFIED token-missing) starts receiving.
// Errors: ports.ErrNotFound; ports.ErrMalformed ("secret-not-supported", "secret-required",
// "invalid-secret"); ports.ErrUnavailable ("provider-unavailable": nothing stored, retry).
func (s *Service) ReplaceSecret(ctx context.Context, m Managed, id int64, secret string) (ports.StoredConnection, error) {
	c, err := s.connections.Connection(ctx, m.ws.ID, id)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("connection %d: %w", id, err)
	}
	switch {
	case !c.Kind.RequiresSecret():
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "secret-not-supported", c.Kind.String())
	case secret == "":
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "secret-required", c.Kind.String())
	case len(secret) > maxSecretLength || !utf8.ValidString(secret):
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-secret", "")
	}
	var access []ports.SubscribedResource
	if checker, checked := s.checkers[c.Kind.String()]; checked {
		set, err := s.connections.Subscriptions(ctx, m.ws.ID, id)
		if err != nil {
			return ports.StoredConnection{}, fmt.Errorf("subscriptions of connection %d: %w", id, err)
		}
		access = make([]ports.SubscribedResource, 0, len(set))
		errs := checkEach(ctx, checker, []byte(secret), set)
		checkedAt := s.now().UTC()
		for i, r := range set {
			v := ports.SubscribedResource{Type: r.Type, ID: r.ID, Access: connection.Verified, AccessCheckedAt: &checkedAt}
			var rej *ports.RejectedError
			switch err := errs[i]; {
			case err == nil:
			case errors.As(err, &rej) && errors.Is(err, ports.ErrForbidden):
				v.Access, v.AccessReason = connection.Revoked, rej.Detail
			case errors.Is(err, ports.ErrMalformed):
				v.Access, v.AccessReason = connection.Revoked, "unsupported-resource"
			case ctx.Err() != nil:
				return ports.StoredConnection{}, ctx.Err()
			default:
				return ports.StoredConnection{}, &ports.RejectedError{Kind: ports.ErrUnavailable, Reason: ReasonProviderUnavailable,
					Detail: fmt.Sprintf("%s %s: %v", r.Type, r.ID, err)}
			}
			access = append(access, v)
		}
	}
	sealed, err := s.secrets.Seal(id, []byte(secret))
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("seal connection secret: %w", err)
	}
	out, err := s.connections.ReplaceSecret(ctx, m.ws.ID, id, sealed, access, ReasonTokenChanged)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("replace secret of connection %d: %w", id, err)
	}
	return out, nil
}

// ReplaceAPIToken sets the provider API token of a connection whose kind accepts one (an
// Outline API key), under the connection's lifecycle lock. It is sealed for the connection
// and never shown; the next page of the connection's sync jobs reads with it.
// Errors: ports.ErrNotFound; ports.ErrMalformed ("api-token-unsupported", "api-token-required",
// "invalid-api-token").
func (s *Service) ReplaceAPIToken(ctx context.Context, m Managed, id int64, token string) (ports.StoredConnection, error) {
	c, err := s.connections.Connection(ctx, m.ws.ID, id)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("connection %d: %w", id, err)
	}
	switch {
	case !c.Kind.AcceptsAPIToken():
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, ReasonAPITokenUnsupported, c.Kind.String())
	case token == "":
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "api-token-required", c.Kind.String())
	case len(token) > maxSecretLength || !utf8.ValidString(token):
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, "invalid-api-token", "")
	}
	sealed, err := s.secrets.Seal(id, []byte(token))
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("seal connection api token: %w", err)
	}
	out, err := s.connections.ReplaceAPIToken(ctx, m.ws.ID, id, sealed)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("replace api token of connection %d: %w", id, err)
	}
	return out, nil
}
