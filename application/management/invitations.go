package management

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Invite invites the person with login to the managed workspace with role (its ADMINs and the
// instance administrator: a Managed). The invitation is stored by login, whether or not an
// account has it, and lasts workspace.InvitationLifetime; inviting a login again refreshes its
// pending invitation (role, inviter, expiry). A login that is a member already gets nothing
// stored (roles of members change with SetMemberRole). The success is the same in every case,
// so inviting tells the caller nothing about accounts. Errors: ports.ErrMalformed
// ("invalid-login", "invalid-role").
func (s *Service) Invite(ctx context.Context, m Managed, login, role string) error {
	if !loginPattern.MatchString(login) {
		return ports.Reject(ports.ErrMalformed, "invalid-login", "")
	}
	r, err := workspace.ParseRole(role)
	if err != nil {
		return ports.Reject(ports.ErrMalformed, "invalid-role", err.Error())
	}
	if err := s.workspaces.Invite(ctx, m.ws.ID, login, r, m.by.AccountID, workspace.InvitationLifetime); err != nil {
		return fmt.Errorf("invite to workspace %q: %w", m.ws.Slug, err)
	}
	return nil
}

// PendingInvitations pages p's own pending, unexpired invitations (any account; the instance
// administrator token is no account and has none). Errors: ports.ErrMalformed for a page out of
// range.
func (s *Service) PendingInvitations(ctx context.Context, p ports.Principal, page ports.PageRequest) ([]ports.Invitation, int, error) {
	if page.Page < 0 || page.Size < 1 {
		return nil, 0, fmt.Errorf("pending invitations: %w", ports.ErrMalformed)
	}
	if p.IsAdminToken() {
		return []ports.Invitation{}, 0, nil
	}
	items, total, err := s.workspaces.PendingInvitations(ctx, p.AccountID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("pending invitations of account %d: %w", p.AccountID, err)
	}
	return items, total, nil
}

// AcceptInvitation makes p a member of the invitation's workspace with its role, and marks the
// invitation accepted, in one transaction; a member already keeps its role. Errors:
// ports.ErrNotFound for anything but a pending, unexpired invitation of p's login (someone
// else's, expired, accepted already, unknown, or the instance administrator token's: one
// answer).
func (s *Service) AcceptInvitation(ctx context.Context, p ports.Principal, invitationID int64) (ports.Joined, error) {
	if p.IsAdminToken() || invitationID <= 0 {
		return ports.Joined{}, fmt.Errorf("invitation %d: %w", invitationID, ports.ErrNotFound)
	}
	j, err := s.workspaces.AcceptInvitation(ctx, p.AccountID, invitationID)
	if err != nil {
		return ports.Joined{}, fmt.Errorf("accept invitation %d: %w", invitationID, err)
	}
	return j, nil
}
