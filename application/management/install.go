package management

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// InstallPrincipal is the principal an install-flow state was issued to, as it stands now: the
// configured administrator token, or the account if it is still enabled (with its current
// instance-administrator flag). Errors: ports.ErrNotFound for an unknown or disabled account.
func (s *Service) InstallPrincipal(ctx context.Context, accountID int64, adminToken bool) (ports.Principal, error) {
	if adminToken {
		return ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}, nil
	}
	if accountID <= 0 {
		return ports.Principal{}, fmt.Errorf("account %d: %w", accountID, ports.ErrNotFound)
	}
	acc, err := s.accounts.Account(ctx, accountID)
	if err != nil {
		return ports.Principal{}, fmt.Errorf("install principal: %w", err)
	}
	return ports.Principal{AccountID: acc.ID, InstanceAdmin: acc.InstanceAdmin}, nil
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
