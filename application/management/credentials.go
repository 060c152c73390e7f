package management

import (
	"context"
	"errors"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// checkCredential is the stored credential checker checks c's subscriptions with: nil for a
// checker that finds its own (contract.OwnCredential), else storedCredential's.
func (s *Service) checkCredential(ctx context.Context, m Managed, c ports.StoredConnection, checker contract.ResourceAccessChecker) ([]byte, error) {
	if _, own := checker.(contract.OwnCredential); own {
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
		return nil, fmt.Errorf("%w: %w", contract.ErrUnverifiable, ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible,
			ReasonAPITokenMissing+": "+c.Kind.String()+" has no API token to verify access with; set it with PUT …/api-token first"))
	case sealed == nil && c.Kind.RequiresSecret():
		return nil, ports.Reject(ports.ErrMalformed, "secret-required", c.Kind.String()+" has no token to check access with")
	case sealed == nil:
		// A SLACK connection the instance administrator created without a bot token.
		return nil, fmt.Errorf("%w: %w", contract.ErrUnverifiable, ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible,
			ReasonTokenMissing+": "+c.Kind.String()+" has no token to verify access with"))
	}
	credential, err := s.secrets.Open(c.ID, sealed)
	if err != nil {
		return nil, fmt.Errorf("open %s of connection %d: %w", what, c.ID, err)
	}
	return credential, nil
}

// ConnectionAccess is what a connection of a kind with an access checker shows as its access:
// UNVERIFIED with reason "token-missing" when it has no credential (it receives nothing),
// VERIFIED otherwise (each subscription then shows its own access). Empty for other kinds.
func (s *Service) ConnectionAccess(c ports.StoredConnection) (access connection.Access, reason string) {
	checker, checked := s.checkers[c.Kind.String()]
	if !checked {
		return connection.Access{}, ""
	}
	if _, own := checker.(contract.OwnCredential); own {
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
	return s.replaceCredential(ctx, m, id, secret, credentialChange{
		what: "secret", accepted: connection.Kind.RequiresSecret,
		unsupported: "secret-not-supported", required: "secret-required", invalid: "invalid-secret",
		// A kind that reads with an API token checks its subscriptions with that, not the secret.
		rechecks: func(k connection.Kind) bool { return !k.AcceptsAPIToken() },
		store:    s.connections.ReplaceSecret,
	})
}

// recheckWith checks every current subscription of connection id with a new credential,
// outside any transaction, and returns the verdicts to store with it: VERIFIED, or REVOKED
// with the provider's cause. Errors: ports.ErrUnavailable ("provider-unavailable": no answer,
// nothing is stored); the context's error.
func (s *Service) recheckWith(ctx context.Context, m Managed, id int64, checker contract.ResourceAccessChecker, credential []byte) ([]ports.SubscribedResource, error) {
	set, err := s.connections.Subscriptions(ctx, m.ws.ID, id)
	if err != nil {
		return nil, fmt.Errorf("subscriptions of connection %d: %w", id, err)
	}
	access := make([]ports.SubscribedResource, 0, len(set))
	_, errs := checkEach(ctx, checker, contract.AccessTarget{WorkspaceID: m.ws.ID, ConnectionID: id, Credential: credential}, set)
	checkedAt := s.now().UTC()
	for i, r := range set {
		v := ports.SubscribedResource{Type: r.Type, ID: r.ID, Access: connection.Verified, AccessCheckedAt: &checkedAt}
		var rej *ports.RejectedError
		switch err := errs[i]; {
		case err == nil:
		case errors.Is(err, contract.ErrUnverifiable):
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
	return s.replaceCredential(ctx, m, id, token, credentialChange{
		what: "api token", accepted: connection.Kind.AcceptsAPIToken,
		unsupported: ReasonAPITokenUnsupported, required: "api-token-required", invalid: "invalid-api-token",
		rechecks: func(connection.Kind) bool { return true },
		store:    s.connections.ReplaceAPIToken,
	})
}

// credentialChange is what replacing a connection's secret and its API token differ in.
type credentialChange struct {
	what     string // "secret" or "api token", in error messages
	accepted func(connection.Kind) bool
	// The reasons of a kind that takes no such credential, an empty one and one beyond
	// validSecret.
	unsupported, required, invalid string
	// rechecks reports whether a kind with an access checker checks its subscriptions with
	// this credential.
	rechecks func(connection.Kind) bool
	// store writes the sealed credential and the subscriptions' verdicts in one transaction.
	store func(ctx context.Context, workspaceID, id int64, sealed []byte, access []ports.SubscribedResource, reason string) (ports.StoredConnection, error)
}

// replaceCredential validates value for connection id, rechecks its subscriptions with it when
// the kind checks with this credential, seals it and stores both.
func (s *Service) replaceCredential(ctx context.Context, m Managed, id int64, value string, ch credentialChange) (ports.StoredConnection, error) {
	c, err := s.connections.Connection(ctx, m.ws.ID, id)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("connection %d: %w", id, err)
	}
	switch {
	case !ch.accepted(c.Kind):
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, ch.unsupported, c.Kind.String())
	case value == "":
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, ch.required, c.Kind.String())
	case !validSecret(value):
		return ports.StoredConnection{}, ports.Reject(ports.ErrMalformed, ch.invalid, "")
	}
	var access []ports.SubscribedResource
	if checker, checked := s.checkers[c.Kind.String()]; checked && ch.rechecks(c.Kind) {
		if access, err = s.recheckWith(ctx, m, id, checker, []byte(value)); err != nil {
			return ports.StoredConnection{}, err
		}
	}
	sealed, err := s.secrets.Seal(id, []byte(value))
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("seal connection %s: %w", ch.what, err)
	}
	out, err := ch.store(ctx, m.ws.ID, id, sealed, access, ReasonTokenChanged)
	if err != nil {
		return ports.StoredConnection{}, fmt.Errorf("replace %s of connection %d: %w", ch.what, id, err)
	}
	return out, nil
}
