package management

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// loginPattern admits the usual login and e-mail characters and nothing a log line or a URL
// would have to escape.
var loginPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$`)

// CreateWorkspace creates an ACTIVE workspace (instance administrator only).
// Errors: ports.ErrForbidden; ports.ErrMalformed ("invalid-slug", "invalid-name");
// ports.ErrConflict when the slug exists.
func (s *Service) CreateWorkspace(ctx context.Context, p ports.Principal, slug, name string) (ports.Workspace, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return ports.Workspace{}, err
	}
	if err := workspace.CheckSlug(slug); err != nil {
		return ports.Workspace{}, ports.Reject(ports.ErrMalformed, "invalid-slug", err.Error())
	}
	if err := workspace.CheckName(name); err != nil {
		return ports.Workspace{}, ports.Reject(ports.ErrMalformed, "invalid-name", err.Error())
	}
	ws, err := s.workspaces.CreateWorkspace(ctx, slug, name)
	if err != nil {
		return ports.Workspace{}, fmt.Errorf("create workspace %q: %w", slug, err)
	}
	return ws, nil
}

// DeleteWorkspace deletes a workspace with its members, connections, subscriptions, inbox rows
// and steps (instance administrator only). Errors: ports.ErrForbidden; ports.ErrNotFound.
func (s *Service) DeleteWorkspace(ctx context.Context, p ports.Principal, slug string) error {
	if err := requireInstanceAdmin(p); err != nil {
		return err
	}
	ws, err := s.WorkspaceBySlug(ctx, slug)
	if err != nil {
		return err
	}
	if err := s.workspaces.DeleteWorkspace(ctx, ws.ID); err != nil {
		return fmt.Errorf("delete workspace %q: %w", slug, err)
	}
	return nil
}

// WorkspaceBySlug finds a workspace without authorising anyone (for internal callers; the API
// goes through Manage). Errors: ports.ErrNotFound.
func (s *Service) WorkspaceBySlug(ctx context.Context, slug string) (ports.Workspace, error) {
	if workspace.CheckSlug(slug) != nil {
		return ports.Workspace{}, fmt.Errorf("workspace %q: %w", slug, ports.ErrNotFound)
	}
	ws, err := s.workspaces.WorkspaceBySlug(ctx, slug)
	if err != nil {
		return ports.Workspace{}, fmt.Errorf("workspace %q: %w", slug, err)
	}
	return ws, nil
}

// ListWorkspaces pages every workspace (instance administrator only). Errors: ports.ErrForbidden.
func (s *Service) ListWorkspaces(ctx context.Context, p ports.Principal, page ports.PageRequest) ([]ports.Workspace, int, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return nil, 0, err
	}
	items, total, err := s.workspaces.ListWorkspaces(ctx, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list workspaces: %w", err)
	}
	return items, total, nil
}

// VisibleWorkspaces pages the workspaces p may see: every workspace for the instance
// administrator, the workspaces p is a member of for an account (the console's overview).
func (s *Service) VisibleWorkspaces(ctx context.Context, p ports.Principal, page ports.PageRequest) ([]ports.Workspace, int, error) {
	if p.InstanceAdmin {
		return s.ListWorkspaces(ctx, p, page)
	}
	items, total, err := s.workspaces.MemberWorkspaces(ctx, p.AccountID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list member workspaces: %w", err)
	}
	return items, total, nil
}

// CreatedAccount is a new account with its token. The token exists only in this value: the
// store keeps its hash, so it is shown once.
type CreatedAccount struct {
	ports.Account
	Token string
}

// CreateAccount creates an account and its bearer token (instance administrator only).
// Errors: ports.ErrForbidden; ports.ErrMalformed ("invalid-login"); ports.ErrConflict when the
// login exists.
func (s *Service) CreateAccount(ctx context.Context, p ports.Principal, login string, instanceAdmin bool) (CreatedAccount, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return CreatedAccount{}, err
	}
	if !loginPattern.MatchString(login) {
		return CreatedAccount{}, ports.Reject(ports.ErrMalformed, "invalid-login", "")
	}
	token, err := newToken()
	if err != nil {
		return CreatedAccount{}, err
	}
	acc, err := s.accounts.CreateAccount(ctx, login, instanceAdmin, HashToken(token))
	if err != nil {
		return CreatedAccount{}, fmt.Errorf("create account %q: %w", login, err)
	}
	return CreatedAccount{Account: acc, Token: token}, nil
}

// SetMemberRole sets a member's role. The instance administrator makes any account a member
// with role, or changes its role; a workspace ADMIN only changes the role of an existing member
// (people join through an invitation they accept): any other account id is ports.ErrNotFound,
// the same answer whether an account has the id or not, so the route tells a workspace ADMIN
// nothing about accounts outside the workspace. Errors: ports.ErrMalformed ("invalid-role");
// ports.ErrNotFound; ports.ErrConflict "last-admin" for a demotion of the workspace's last
// ADMIN.
func (s *Service) SetMemberRole(ctx context.Context, m Managed, accountID int64, role string) (ports.Membership, error) {
	r, err := workspace.ParseRole(role)
	if err != nil {
		return ports.Membership{}, ports.Reject(ports.ErrMalformed, "invalid-role", err.Error())
	}
	if accountID <= 0 {
		return ports.Membership{}, fmt.Errorf("account %d: %w", accountID, ports.ErrNotFound)
	}
	write := s.workspaces.ChangeMemberRole
	if m.by.InstanceAdmin {
		write = s.workspaces.SetMemberRole
	}
	mb, err := write(ctx, m.ws.ID, accountID, r)
	if err != nil {
		return ports.Membership{}, fmt.Errorf("set role of account %d: %w", accountID, err)
	}
	return mb, nil
}

// ListAccounts pages every account, disabled ones included (instance administrator only), as
// the account administration lists them; never a token. Errors: ports.ErrForbidden;
// ports.ErrMalformed for a page out of range.
func (s *Service) ListAccounts(ctx context.Context, p ports.Principal, page ports.PageRequest) ([]ports.Account, int, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return nil, 0, err
	}
	if page.Page < 0 || page.Size < 1 {
		return nil, 0, fmt.Errorf("list accounts: %w", ports.ErrMalformed)
	}
	items, total, err := s.accounts.ListAccounts(ctx, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list accounts: %w", err)
	}
	return items, total, nil
}

// ListMembers pages the members of the managed workspace with their logins and roles (its
// ADMINs and the instance administrator: a Managed). Errors: ports.ErrMalformed for a page out
// of range.
func (s *Service) ListMembers(ctx context.Context, m Managed, page ports.PageRequest) ([]ports.Member, int, error) {
	if page.Page < 0 || page.Size < 1 {
		return nil, 0, fmt.Errorf("list members: %w", ports.ErrMalformed)
	}
	items, total, err := s.workspaces.ListMembers(ctx, m.ws.ID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list members of workspace %d: %w", m.ws.ID, err)
	}
	return items, total, nil
}
