package management

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// IssuedToken is a new token of an account. Value exists only in this value: the store keeps
// its hash, so it is shown once.
type IssuedToken struct {
	ports.Token
	Value string
}

// IssueToken gives the account another token (instance administrator only); its earlier tokens
// stay valid until revoked. expiresAt nil: the token does not expire.
// Errors: ports.ErrForbidden; ports.ErrNotFound; ports.ErrConflict "account-disabled";
// ports.ErrMalformed "invalid-expires-at".
func (s *Service) IssueToken(ctx context.Context, p ports.Principal, accountID int64, expiresAt *time.Time) (IssuedToken, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return IssuedToken{}, err
	}
	if accountID <= 0 {
		return IssuedToken{}, fmt.Errorf("account %d: %w", accountID, ports.ErrNotFound)
	}
	value, err := newToken()
	if err != nil {
		return IssuedToken{}, err
	}
	t, err := s.accounts.IssueToken(ctx, accountID, HashToken(value), expiresAt)
	if err != nil {
		return IssuedToken{}, fmt.Errorf("issue token for account %d: %w", accountID, err)
	}
	return IssuedToken{Token: t, Value: value}, nil
}

// ListTokens lists an account's live tokens, never a token itself (instance administrator
// only). Errors: ports.ErrForbidden; ports.ErrNotFound.
func (s *Service) ListTokens(ctx context.Context, p ports.Principal, accountID int64, page ports.PageRequest) ([]ports.Token, int, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return nil, 0, err
	}
	if accountID <= 0 {
		return nil, 0, fmt.Errorf("account %d: %w", accountID, ports.ErrNotFound)
	}
	if page.Page < 0 || page.Size < 1 {
		return nil, 0, fmt.Errorf("list tokens: %w", ports.ErrMalformed)
	}
	ts, total, err := s.accounts.ListTokens(ctx, accountID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list tokens of account %d: %w", accountID, err)
	}
	return ts, total, nil
}

// RevokeToken revokes one token of an account (instance administrator only); it fails on every
// server from the next request on. Errors: ports.ErrForbidden; ports.ErrNotFound.
func (s *Service) RevokeToken(ctx context.Context, p ports.Principal, accountID, tokenID int64) error {
	if err := requireInstanceAdmin(p); err != nil {
		return err
	}
	if accountID <= 0 || tokenID <= 0 {
		return fmt.Errorf("token %d of account %d: %w", tokenID, accountID, ports.ErrNotFound)
	}
	if err := s.accounts.RevokeToken(ctx, accountID, tokenID); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}

// RotateOwnToken replaces the token the caller authenticated with by a new one with the same
// expiry; the old one stops working when this commits. The configured administrator token is
// no account token: it is rotated by changing the configuration.
// Errors: ports.ErrConflict "admin-token-not-rotatable"; ports.ErrUnauthenticated when the
// token was revoked or rotated concurrently.
func (s *Service) RotateOwnToken(ctx context.Context, p ports.Principal) (IssuedToken, error) {
	if p.IsAdminToken() || p.TokenID <= 0 {
		return IssuedToken{}, ports.Reject(ports.ErrConflict, "admin-token-not-rotatable", "")
	}
	value, err := newToken()
	if err != nil {
		return IssuedToken{}, err
	}
	t, err := s.accounts.ReplaceToken(ctx, p.AccountID, p.TokenID, HashToken(value))
	if err != nil {
		if errors.Is(err, ports.ErrNotFound) {
			// The token this request authenticated with is gone: it no longer authenticates.
			return IssuedToken{}, ports.ErrUnauthenticated
		}
		return IssuedToken{}, fmt.Errorf("rotate token %d: %w", p.TokenID, err)
	}
	return IssuedToken{Token: t, Value: value}, nil
}

// DisableAccount disables an account (instance administrator only): every token of it stops
// working; the row stays, so audit records keep its id and login.
// Errors: ports.ErrForbidden; ports.ErrNotFound; ports.ErrConflict "cannot-disable-self".
func (s *Service) DisableAccount(ctx context.Context, p ports.Principal, accountID int64) error {
	if err := requireInstanceAdmin(p); err != nil {
		return err
	}
	if accountID <= 0 {
		return fmt.Errorf("account %d: %w", accountID, ports.ErrNotFound)
	}
	if accountID == p.AccountID {
		// An instance administrator account locking itself out is almost surely a mistake; the
		// configured token or another administrator can do it.
		return ports.Reject(ports.ErrConflict, "cannot-disable-self", "")
	}
	if err := s.accounts.DisableAccount(ctx, accountID); err != nil {
		return fmt.Errorf("disable account %d: %w", accountID, err)
	}
	return nil
}

// RemoveMember removes an account from the managed workspace, never its last ADMIN.
// Errors: ports.ErrNotFound (no such member); ports.ErrConflict "last-admin".
func (s *Service) RemoveMember(ctx context.Context, m Managed, accountID int64) error {
	if accountID <= 0 {
		return fmt.Errorf("member %d: %w", accountID, ports.ErrNotFound)
	}
	if err := s.workspaces.RemoveMember(ctx, m.ws.ID, accountID); err != nil {
		return fmt.Errorf("remove member %d: %w", accountID, err)
	}
	return nil
}
