package managementapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// invite invites a person by login to the workspace ({"login","role"}): 202 {} whether or not
// an account has the login, and for a login that is a member already, so the answer names no
// account (RequireManager: the workspace's ADMINs and the instance administrator).
func (h handlers) invite(c *gin.Context) {
	var req struct {
		Login string `json:"login"`
		Role  string `json:"role"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.svc.Invite(c.Request.Context(), ManagedOf(c), req.Login, req.Role); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{})
}

type workspaceRefJSON struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

type invitationJSON struct {
	ID        int64            `json:"id"`
	Workspace workspaceRefJSON `json:"workspace"`
	Role      string           `json:"role"`
	// InvitedBy is the inviting account's login; absent when the instance administrator token
	// invited.
	InvitedBy string `json:"invitedBy,omitempty"`
	CreatedAt string `json:"createdAt"`
	ExpiresAt string `json:"expiresAt"`
}

// myInvitations pages the caller's own pending, unexpired invitations (any authenticated
// caller; the instance administrator token has none).
func (h handlers) myInvitations(c *gin.Context) {
	page, err := Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	invitations, total, err := h.svc.PendingInvitations(c.Request.Context(), PrincipalOf(c), page)
	if err != nil {
		h.fail(c, err)
		return
	}
	items := make([]invitationJSON, len(invitations))
	for i, inv := range invitations {
		items[i] = invitationJSON{ID: inv.ID, Workspace: workspaceRefJSON{Slug: inv.Workspace.Slug, Name: inv.Workspace.Name},
			Role: inv.Role.String(), InvitedBy: inv.InvitedBy, CreatedAt: timestamp(inv.CreatedAt), ExpiresAt: timestamp(inv.ExpiresAt)}
	}
	c.JSON(http.StatusOK, NewPage(items, page, total))
}

// acceptInvitation makes the caller a member through one of its own pending invitations and
// answers the membership (any authenticated caller, for its own invitations only: anyone
// else's, an expired or an accepted one is 404, one answer for all).
func (h handlers) acceptInvitation(c *gin.Context) {
	id, err := idParam(c, "id")
	if err != nil {
		h.fail(c, err)
		return
	}
	j, err := h.svc.AcceptInvitation(c.Request.Context(), PrincipalOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, joinedJSON(j))
}

func joinedJSON(j ports.Joined) gin.H {
	return gin.H{
		"accountId": j.Membership.AccountID,
		"role":      j.Membership.Role.String(),
		"workspace": workspaceRefJSON{Slug: j.Workspace.Slug, Name: j.Workspace.Name},
	}
}
