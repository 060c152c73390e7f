package outlineread

import (
	"context"
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	domainws "github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Members finds a workspace and a caller's role in it; the management workspace store
// (adapters/postgres/management.Workspaces) is one.
type Members interface {
	// WorkspaceBySlug errors: ports.ErrNotFound.
	WorkspaceBySlug(ctx context.Context, slug string) (ports.Workspace, error)
	// MemberRole errors: ports.ErrNotFound when the account is no member.
	MemberRole(ctx context.Context, workspaceID, accountID int64) (domainws.Role, error)
}

const readableKey = "hephaestus.mirror.outline.workspace"

// requireReader has the access rule of the GitHub mirror's read API (mirrorapi.RequireMember),
// kept here until that package exports the workspace it authorised. It lets the authenticated caller (managementapi.RequireAuth runs first) read the
// workspace named by :ws: the instance administrator and every member, whatever its role,
// since reading the mirror manages nothing. 404 for no such workspace, 403 for a known
// workspace the caller is no member of.
func requireReader(m Members) gin.HandlerFunc {
	return func(c *gin.Context) {
		ws, err := readable(c.Request.Context(), m, managementapi.PrincipalOf(c), c.Param(managementapi.WorkspaceParam))
		if err != nil {
			httperr.Write(c, err)
			return
		}
		c.Set(readableKey, ws.ID)
		c.Next()
	}
}

func readable(ctx context.Context, m Members, p ports.Principal, slug string) (ports.Workspace, error) {
	if domainws.CheckSlug(slug) != nil {
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

// workspaceOf is the workspace requireReader authorised.
func workspaceOf(c *gin.Context) int64 { return c.MustGet(readableKey).(int64) }
