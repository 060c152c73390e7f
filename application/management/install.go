package management

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// InstallPrincipal is the principal an install-flow state was issued to, as it stands now, and
// only while the token that started the flow still authenticates: an account's token tokenID
// must not be revoked, rotated or expired, nor its account disabled (the principal carries the
// account's current instance-administrator flag); the configured administrator token must be
// the one whose AdminTokenFingerprint under key the state carries (adminFingerprint non-nil),
// so changing the configured token ends the flows it started. Errors: ports.ErrUnauthenticated
// when the token no longer authenticates; the store's errors.
func (s *Service) InstallPrincipal(ctx context.Context, accountID, tokenID int64, adminFingerprint, key []byte) (ports.Principal, error) {
	if adminFingerprint != nil {
		if !hmac.Equal(adminFingerprint, s.AdminTokenFingerprint(key)) {
			return ports.Principal{}, fmt.Errorf("install principal: administrator token changed: %w", ports.ErrUnauthenticated)
		}
		return ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}, nil
	}
	if accountID <= 0 || tokenID <= 0 {
		return ports.Principal{}, fmt.Errorf("install principal: no account token: %w", ports.ErrUnauthenticated)
	}
	owner, err := s.accounts.LiveToken(ctx, accountID, tokenID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return ports.Principal{}, fmt.Errorf("install principal: token %d: %w", tokenID, ports.ErrUnauthenticated)
	case err != nil:
		return ports.Principal{}, fmt.Errorf("install principal: %w", err)
	}
	return ports.Principal{AccountID: owner.Account.ID, InstanceAdmin: owner.Account.InstanceAdmin, TokenID: owner.TokenID}, nil
}

// AdminTokenFingerprint is HMAC-SHA256(key, SHA-256 of the configured administrator token): it
// names the current token in a value that travels outside (an install state, through the
// provider) without revealing it or letting anyone without key test guesses against it.
func (s *Service) AdminTokenFingerprint(key []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(s.adminHash[:])
	return mac.Sum(nil)
}

// CreateVerifiedInstallConnection creates a connection that the provider itself vouched for in
// an install flow (application/installflow): the GitHub App installation listed for the
// installing person's user token, or the Slack team of a completed OAuth exchange. m is the
// workspace its ADMIN started the flow for.
//
// This is the one call site besides the instance administrator that may create the shared-URL
// kinds (GITHUB_APP, SLACK), which a workspace ADMIN may not create directly: the provider's
// verification stands in for the operator, so the connection is created as the instance
// administrator would create it. Errors: those of CreateConnection.
func (s *Service) CreateVerifiedInstallConnection(ctx context.Context, m Managed, req ConnectionRequest) (ports.StoredConnection, error) {
	verified := Managed{ws: m.ws, by: ports.Principal{AccountID: m.by.AccountID, InstanceAdmin: true, TokenID: m.by.TokenID}}
	return s.CreateConnection(ctx, verified, req)
}
