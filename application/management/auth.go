package management

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// TokenPrefix starts every account token, so a leaked token is recognisable (secret scanners,
// logs) as a Hephaestus credential.
const TokenPrefix = "hx_"

// maxTokenLength refuses absurd Authorization headers before hashing them.
const maxTokenLength = 512

// newToken is TokenPrefix and 32 random bytes in unpadded base64url.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate account token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// HashToken is the stored form of a token: its SHA-256. Tokens carry 256 random bits, so an
// unsalted fast hash is enough, and the lookup by hash compares nothing secret in Go.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Authenticate finds the caller of a bearer token: the instance administrator (the configured
// token, compared in constant time) or the enabled account one of whose live tokens matches.
// Errors: ports.ErrUnauthenticated for an empty, unknown or overlong token.
func (s *Service) Authenticate(ctx context.Context, token string) (ports.Principal, error) {
	if token == "" || len(token) > maxTokenLength {
		return ports.Principal{}, ports.ErrUnauthenticated
	}
	hash := HashToken(token)
	if subtle.ConstantTimeCompare(hash, s.adminHash[:]) == 1 {
		return ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}, nil
	}
	// No cache: the store's lookup is the only source, so a revoked or expired token, or one of
	// a disabled account, fails on every server at its next request.
	owner, err := s.accounts.TokenOwner(ctx, hash)
	if errors.Is(err, ports.ErrNotFound) {
		return ports.Principal{}, ports.ErrUnauthenticated
	}
	if err != nil {
		return ports.Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	return ports.Principal{AccountID: owner.Account.ID, InstanceAdmin: owner.Account.InstanceAdmin, TokenID: owner.TokenID}, nil
}

// Managed is a workspace its caller may manage. Only Service.Manage makes one, so every use
// case that takes it is authorised by construction.
type Managed struct {
	ws ports.Workspace
	by ports.Principal
}

// Workspace is the managed workspace.
func (m Managed) Workspace() ports.Workspace { return m.ws }

// Principal is the caller who manages it (replays record its account).
func (m Managed) Principal() ports.Principal { return m.by }

// Manage authorises p to manage the workspace with slug: the instance administrator manages
// every workspace, a member with role ADMIN manages its own.
// Errors: ports.ErrNotFound for no such workspace; ports.ErrForbidden for a known workspace p
// may not manage.
func (s *Service) Manage(ctx context.Context, p ports.Principal, slug string) (Managed, error) {
	if workspace.CheckSlug(slug) != nil {
		return Managed{}, fmt.Errorf("workspace %q: %w", slug, ports.ErrNotFound)
	}
	ws, err := s.workspaces.WorkspaceBySlug(ctx, slug)
	if err != nil {
		return Managed{}, fmt.Errorf("workspace %q: %w", slug, err)
	}
	if p.InstanceAdmin {
		return Managed{ws: ws, by: p}, nil
	}
	role, err := s.workspaces.MemberRole(ctx, ws.ID, p.AccountID)
	if errors.Is(err, ports.ErrNotFound) {
		return Managed{}, fmt.Errorf("account %d in workspace %q: %w", p.AccountID, slug, ports.ErrForbidden)
	}
	if err != nil {
		return Managed{}, fmt.Errorf("member role: %w", err)
	}
	if !role.Manages() {
		return Managed{}, fmt.Errorf("account %d is %s of workspace %q: %w", p.AccountID, role, slug, ports.ErrForbidden)
	}
	return Managed{ws: ws, by: p}, nil
}

// requireInstanceAdmin guards the instance-wide use cases. Errors: ports.ErrForbidden.
func requireInstanceAdmin(p ports.Principal) error {
	if !p.InstanceAdmin {
		return fmt.Errorf("account %d is no instance administrator: %w", p.AccountID, ports.ErrForbidden)
	}
	return nil
}
