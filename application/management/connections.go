package management

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	credential, err := s.checkCredential(ctx, m, c, checker)
	if errors.Is(err, ports.ErrUnverifiable) && m.by.InstanceAdmin {
		return vouched(out), nil
	}
	if err != nil {
		return nil, err
	}
	defer clear(credential)

	infos, errs := checkEach(ctx, checker, ports.AccessTarget{WorkspaceID: m.ws.ID, ConnectionID: c.ID, Credential: credential}, out)
	checkedAt := s.now().UTC()
	for i, err := range errs {
		var rej *ports.RejectedError
		switch {
		case err == nil:
			out[i].AccessCheckedAt = &checkedAt
			if err := resolveName(&out[i], infos[i]); err != nil {
				return nil, err
			}
		case errors.Is(err, ports.ErrUnverifiable) && m.by.InstanceAdmin:
			// The server cannot ask (no API root or App key): the instance administrator
			// vouches, a workspace ADMIN never can.
			return vouched(out), nil
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

// ReasonNameMismatch refuses a subscription whose "name" is not the provider's name of its id:
// the id decides what is read, and a name is display only, so a name naming another resource
// is a mistake (or an attempt) the caller hears about (400), never stored.
const ReasonNameMismatch = "name-mismatch"

// resolveName sets r's name to the provider's (info), refusing a given name that differs from
// it (case-insensitively: GitHub and Slack names are). An empty given name takes the
// provider's.
func resolveName(r *ports.SubscribedResource, info ports.ResourceInfo) error {
	if info.Name == "" {
		return nil
	}
	if r.Name != "" && !strings.EqualFold(r.Name, info.Name) {
		return ports.Reject(ports.ErrMalformed, ReasonNameMismatch,
			fmt.Sprintf("%s %s is %q, not %q: the name is display only and taken from the id", r.Type, r.ID, info.Name, r.Name))
	}
	r.Name = info.Name
	return nil
}

// ReasonVouched is the access reason of a subscription the server could not verify (no API root
// or App key configured for the provider, or a connection without the credential a check
// needs) and the instance administrator stored anyway: VERIFIED, never checked
// (accessCheckedAt null), rechecked once a check becomes possible. A workspace ADMIN gets 403
// resource-not-accessible instead.
const ReasonVouched = "vouched-by-instance-admin"

// vouched marks every resource VERIFIED on the instance administrator's word.
func vouched(out []ports.SubscribedResource) []ports.SubscribedResource {
	for i := range out {
		out[i].AccessReason, out[i].AccessCheckedAt = ReasonVouched, nil
	}
	return out
}

// checkCredential is the stored credential checker checks c's subscriptions with: nil for a
// checker that finds its own (ports.OwnCredential), else storedCredential's.
func (s *Service) checkCredential(ctx context.Context, m Managed, c ports.StoredConnection, checker ports.ResourceAccessChecker) ([]byte, error) {
	if _, own := checker.(ports.OwnCredential); own {
		return nil, nil
	}
	return s.storedCredential(ctx, m, c)
}

// ReasonAPITokenMissing is the detail of a 403 resource-not-accessible for a subscription of a
// connection whose kind reads with an API token (GITLAB) that has none yet: nothing can be
// verified, so nothing is stored; PUT …/api-token first.
const ReasonAPITokenMissing = "api-token-missing"

// storedCredential opens the credential c's subscriptions are checked with: its provider API
// token for a kind that accepts one (GITLAB, OUTLINE), else its secret (a PAT, a bot token).
// The caller clears it. Errors: 403 resource-not-accessible "api-token-missing", 400
// secret-required, ErrNotFound, a secret that does not open.
func (s *Service) storedCredential(ctx context.Context, m Managed, c ports.StoredConnection) ([]byte, error) {
	read, what := s.connections.SealedSecret, "secret"
	if c.Kind.AcceptsAPIToken() {
		read, what = s.connections.SealedAPIToken, "api token"
	}
	sealed, err := read(ctx, m.ws.ID, c.ID)
	if err != nil {
		return nil, fmt.Errorf("%s of connection %d: %w", what, c.ID, err)
	}
	switch {
	case sealed == nil && c.Kind.AcceptsAPIToken():
		return nil, fmt.Errorf("%w: %w", ports.ErrUnverifiable, ports.Reject(ports.ErrForbidden, ports.ReasonResourceNotAccessible,
			ReasonAPITokenMissing+": "+c.Kind.String()+" has no API token to verify access with; set it with PUT …/api-token first"))
	case sealed == nil && c.Kind.RequiresSecret():
		return nil, ports.Reject(ports.ErrMalformed, "secret-required", c.Kind.String()+" has no token to check access with")
	case sealed == nil:
		// A SLACK connection the instance administrator created without a bot token.
		return nil, fmt.Errorf("%w: %w", ports.ErrUnverifiable, ports.Reject(ports.ErrForbidden, ports.ReasonResourceNotAccessible,
			ReasonTokenMissing+": "+c.Kind.String()+" has no token to verify access with"))
	}
	credential, err := s.secrets.Open(c.ID, sealed)
	if err != nil {
		return nil, fmt.Errorf("open %s of connection %d: %w", what, c.ID, err)
	}
	return credential, nil
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
	checker, checked := s.checkers[c.Kind.String()]
	if !checked {
		return connection.Access{}, ""
	}
	if _, own := checker.(ports.OwnCredential); own {
		// Its credential is minted for its installation, not stored: nothing to show.
		return connection.Access{}, ""
	}
	if c.Kind.AcceptsAPIToken() && !c.HasAPIToken {
		return connection.Unverified, ReasonAPITokenMissing
	}
	if !c.Kind.AcceptsAPIToken() && !c.HasSecret {
		return connection.Unverified, ReasonTokenMissing
	}
	return connection.Verified, ""
}

// ReasonTokenMissing is the access reason of a connection, and of its subscriptions, that
// has no credential to check access with.
const ReasonTokenMissing = "token-missing"

// checkEach checks every resource for target, at most maxConcurrentAccessChecks at once, and
// returns each check's answer and error.
func checkEach(ctx context.Context, checker ports.ResourceAccessChecker, target ports.AccessTarget, resources []ports.SubscribedResource) ([]ports.ResourceInfo, []error) {
	infos, errs := make([]ports.ResourceInfo, len(resources)), make([]error, len(resources))
	sem := make(chan struct{}, maxConcurrentAccessChecks)
	var wg sync.WaitGroup
	for i := range resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			infos[i], errs[i] = checker.CheckAccess(ctx, target, ports.Resource{Type: resources[i].Type, ID: resources[i].ID})
		}()
	}
	wg.Wait()
	return infos, errs
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
	if checker, checked := s.checkers[c.Kind.String()]; checked && !c.Kind.AcceptsAPIToken() {
		if access, err = s.recheckWith(ctx, m, id, checker, []byte(secret)); err != nil {
			return ports.StoredConnection{}, err
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

// recheckWith checks every current subscription of connection id with a new credential,
// outside any transaction, and returns the verdicts to store with it: VERIFIED, or REVOKED
// with the provider's cause. Errors: ports.ErrUnavailable ("provider-unavailable": no answer,
// nothing is stored); the context's error.
func (s *Service) recheckWith(ctx context.Context, m Managed, id int64, checker ports.ResourceAccessChecker, credential []byte) ([]ports.SubscribedResource, error) {
	set, err := s.connections.Subscriptions(ctx, m.ws.ID, id)
	if err != nil {
		return nil, fmt.Errorf("subscriptions of connection %d: %w", id, err)
	}
	access := make([]ports.SubscribedResource, 0, len(set))
	_, errs := checkEach(ctx, checker, ports.AccessTarget{WorkspaceID: m.ws.ID, ConnectionID: id, Credential: credential}, set)
	checkedAt := s.now().UTC()
	for i, r := range set {
		v := ports.SubscribedResource{Type: r.Type, ID: r.ID, Access: connection.Verified, AccessCheckedAt: &checkedAt}
		var rej *ports.RejectedError
		switch err := errs[i]; {
		case err == nil:
		case errors.Is(err, ports.ErrUnverifiable):
			// The server cannot ask: the subscription keeps the access it had.
			v.Access, v.AccessReason, v.AccessCheckedAt = r.Access, r.AccessReason, r.AccessCheckedAt
		case errors.As(err, &rej) && errors.Is(err, ports.ErrForbidden):
			v.Access, v.AccessReason = connection.Revoked, rej.Detail
		case errors.Is(err, ports.ErrMalformed):
			v.Access, v.AccessReason = connection.Revoked, "unsupported-resource"
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			return nil, &ports.RejectedError{Kind: ports.ErrUnavailable, Reason: ReasonProviderUnavailable,
				Detail: fmt.Sprintf("%s %s: %v", r.Type, r.ID, err)}
		}
		access = append(access, v)
	}
	return access, nil
}

// ReplaceAPIToken sets the provider API token of a connection whose kind accepts one (a GitLab
// token with read_api, an Outline API key), under the connection's lifecycle lock. It is
// sealed for the connection and never shown; the connection's reads (sync jobs, handlers) use
// it. For a kind whose subscriptions are checked with it (GITLAB), every current subscription
// is checked with the new token first, outside any transaction, and stored with its verdict in
// the token's transaction (as ReplaceSecret does for a PAT): this is how a GitLab connection's
// subscriptions become VERIFIED.
// Errors: ports.ErrNotFound; ports.ErrMalformed ("api-token-unsupported", "api-token-required",
// "invalid-api-token"); ports.ErrUnavailable ("provider-unavailable": nothing stored, retry).
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
	var access []ports.SubscribedResource
	if checker, checked := s.checkers[c.Kind.String()]; checked {
		if access, err = s.recheckWith(ctx, m, id, checker, []byte(token)); err != nil {
			return ports.StoredConnection{}, err
		}
	}
	sealed, err := s.secrets.Seal(id, []byte(token))
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("seal connection api token: %w", err)
	}
	out, err := s.connections.ReplaceAPIToken(ctx, m.ws.ID, id, sealed, access, ReasonTokenChanged)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("replace api token of connection %d: %w", id, err)
	}
	return out, nil
}
