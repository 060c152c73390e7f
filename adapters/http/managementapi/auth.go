package managementapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// WorkspaceParam is the path parameter that names a workspace by its slug. Every route under
// /api/workspaces/:ws uses this name (gin requires one name per path segment).
const WorkspaceParam = "ws"

// Keys of the values the middleware leaves in the gin context.
const (
	principalKey = "hephaestus.management.principal"
	managedKey   = "hephaestus.management.managed"
	memberKey    = "hephaestus.management.member"
)

// Authenticator finds the caller of a bearer token; *management.Service is one.
type Authenticator interface {
	// Authenticate errors: ports.ErrUnauthenticated.
	Authenticate(ctx context.Context, token string) (ports.Principal, error)
}

// Manager authorises a caller to manage a workspace; *management.Service is one.
type Manager interface {
	// Manage errors: ports.ErrNotFound, ports.ErrForbidden.
	Manage(ctx context.Context, p ports.Principal, slug string) (management.Managed, error)
}

// RequireAuth authenticates the bearer token of every request it guards and answers 401
// (with WWW-Authenticate) when there is none or it is not valid.
func RequireAuth(auth Authenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		token, ok := bearerToken(c.GetHeader("Authorization"))
		if !ok {
			unauthenticated(c)
			return
		}
		p, err := auth.Authenticate(c.Request.Context(), token)
		if err != nil {
			if status, _ := httperr.Status(err); status == http.StatusUnauthorized {
				unauthenticated(c)
				return
			}
			httperr.Write(c, err)
			return
		}
		c.Set(principalKey, p)
		c.Next()
	}
}

func unauthenticated(c *gin.Context) {
	c.Header("WWW-Authenticate", `Bearer realm="hephaestus"`)
	httperr.Write(c, ports.ErrUnauthenticated)
}

// bearerToken reads "Bearer <token>" (the scheme is case-insensitive, RFC 9110).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// PrincipalOf is the caller RequireAuth authenticated. It panics when RequireAuth did not run,
// because that is a routing mistake that must not answer as anybody.
func PrincipalOf(c *gin.Context) ports.Principal {
	return c.MustGet(principalKey).(ports.Principal)
}

// RequireManager authorises the authenticated caller (RequireAuth runs first) to manage the
// workspace named by the :ws parameter: 404 for no such workspace, 403 for a known workspace
// the caller may not manage. Handlers read the result with ManagedOf.
func RequireManager(m Manager) gin.HandlerFunc {
	return func(c *gin.Context) {
		managed, err := m.Manage(c.Request.Context(), PrincipalOf(c), c.Param(WorkspaceParam))
		if err != nil {
			httperr.Write(c, err)
			return
		}
		c.Set(managedKey, managed)
		c.Next()
	}
}

// ManagedOf is the workspace RequireManager authorised. It panics when RequireManager did not
// run, for the reason PrincipalOf does.
func ManagedOf(c *gin.Context) management.Managed {
	return c.MustGet(managedKey).(management.Managed)
}

// Members finds a workspace and a caller's role in it; ports.WorkspaceStore
// (adapters/postgres/managementstore.Workspaces) is one.
type Members interface {
	// WorkspaceBySlug errors: ports.ErrNotFound.
	WorkspaceBySlug(ctx context.Context, slug string) (ports.Workspace, error)
	// MemberRole errors: ports.ErrNotFound when the account is no member.
	MemberRole(ctx context.Context, workspaceID, accountID int64) (workspace.Role, error)
}

// RequireMember authorises the authenticated caller (RequireAuth runs first) to read the
// workspace named by the :ws parameter: the instance administrator, or any member of the
// workspace whatever its role, since reading (the mirrors' read APIs) manages nothing. 404 for
// no such workspace, 403 for a known workspace the caller is no member of, as RequireManager
// answers. Handlers read the result with MemberWorkspaceOf.
func RequireMember(m Members) gin.HandlerFunc {
	return func(c *gin.Context) {
		ws, err := memberWorkspace(c.Request.Context(), m, PrincipalOf(c), c.Param(WorkspaceParam))
		if err != nil {
			httperr.Write(c, err)
			return
		}
		c.Set(memberKey, ws)
		c.Next()
	}
}

// MemberWorkspace is RequireMember's decision for other inbound adapters (the console): the
// workspace of slug when p is one of its members or the instance administrator. Errors:
// ports.ErrNotFound (unknown slug), ports.ErrForbidden (not a member).
func MemberWorkspace(ctx context.Context, m Members, p ports.Principal, slug string) (ports.Workspace, error) {
	return memberWorkspace(ctx, m, p, slug)
}

func memberWorkspace(ctx context.Context, m Members, p ports.Principal, slug string) (ports.Workspace, error) {
	if workspace.CheckSlug(slug) != nil {
		return ports.Workspace{}, fmt.Errorf("workspace %q: %w", slug, ports.ErrNotFound)
	}
	ws, err := m.WorkspaceBySlug(ctx, slug)
	if err != nil {
		return ports.Workspace{}, fmt.Errorf("workspace %q: %w", slug, err)
	}
	if p.InstanceAdmin {
		return ws, nil
	}
	if _, err := m.MemberRole(ctx, ws.ID, p.AccountID); err != nil {
		if errors.Is(err, ports.ErrNotFound) {
			return ports.Workspace{}, fmt.Errorf("account %d in workspace %q: %w", p.AccountID, slug, ports.ErrForbidden)
		}
		return ports.Workspace{}, fmt.Errorf("member role: %w", err)
	}
	return ws, nil
}

// MemberWorkspaceOf is the workspace RequireMember authorised. It panics when RequireMember did
// not run, for the reason PrincipalOf does.
func MemberWorkspaceOf(c *gin.Context) ports.Workspace {
	return c.MustGet(memberKey).(ports.Workspace)
}

// RequireInstanceAdmin answers 403 to an authenticated caller who is not the instance
// administrator (for routes under /api/admin whose use case does not check it itself).
func RequireInstanceAdmin() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !PrincipalOf(c).InstanceAdmin {
			httperr.Write(c, ports.ErrForbidden)
			return
		}
		c.Next()
	}
}

// MemberRoutes is the route group of a read API under /api/workspaces/{ws}{path}: a valid token
// (401) of a member of the workspace or the instance administrator (403 for a non-member, 404
// for an unknown workspace), whatever the member's role.
func MemberRoutes(r gin.IRouter, auth Authenticator, members Members, path string) *gin.RouterGroup {
	return r.Group("/api/workspaces/:"+WorkspaceParam+path, RequireAuth(auth), RequireMember(members))
}
