package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// membersView is a workspace's member page.
type membersView struct {
	Items []ports.Member
	Pager pager
	Roles []string
	// Account and Role keep what was typed when adding was refused; Login and InviteRole what
	// was typed when an invitation was refused.
	Account, Role     string
	Login, InviteRole string
	Lifetime          string
}

var memberRoles = []string{"MEMBER", "ADMIN"}

// members lists the workspace's members, paged, with a role form and a remove button each, the
// form to invite a person by login (the workspace's ADMINs and the instance administrator, as
// PUT/DELETE /api/workspaces/{ws}/members/{accountId} and POST …/invitations) and, for the
// instance administrator only, the form to add an account by id.
func (c *console) members(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	c.renderMembers(g, m, http.StatusOK, "", membersView{})
}

func (c *console) renderMembers(g *gin.Context, m management.Managed, status int, message string, v membersView) {
	req := pageOf(g)
	items, total, err := c.cfg.Management.ListMembers(g.Request.Context(), m, req)
	if err != nil {
		c.fail(g, err)
		return
	}
	v.Items, v.Pager, v.Roles, v.Lifetime = items, newPager(req, total), memberRoles, lifetimeText
	// The notice names a member as stored, never text of the URL.
	var notice string
	if changed, err := strconv.ParseInt(g.Query("changed"), 10, 64); err == nil {
		for _, mb := range items {
			if mb.AccountID == changed {
				notice = fmt.Sprintf("%s (%d) is %s of %s.", mb.Login, mb.AccountID, mb.Role, m.Workspace().Slug)
			}
		}
	}
	if g.Query("invited") == "1" {
		// The same notice for every login: the page tells nobody whether an account has it.
		notice = fmt.Sprintf("Invitation sent. If an account has that login, it can accept on its workspaces page within %s.", lifetimeText)
	}
	if removed, err := strconv.ParseInt(g.Query("removed"), 10, 64); err == nil && removed > 0 {
		notice = fmt.Sprintf("Account %d is no longer a member of %s.", removed, m.Workspace().Slug)
		for _, mb := range items {
			if mb.AccountID == removed {
				notice = "" // still listed: the notice would not be true
			}
		}
	}
	slug := m.Workspace().Slug
	c.render(g, status, "members", page{Title: "Members · " + slug, Workspace: slug, Notice: notice, Message: message, Data: v})
}

// setMember adds an account to the workspace with a role, or changes a member's role (the
// account from the add form's field, or the row's path).
func (c *console) setMember(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	raw := g.Param("account")
	if raw == "" {
		raw = strings.TrimSpace(g.PostForm("account"))
	}
	role := g.PostForm("role")
	refuse := func(status int, msg string) {
		c.renderMembers(g, m, status, msg, membersView{Account: raw, Role: role})
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		refuse(http.StatusBadRequest, "Name the account by its id (a number).")
		return
	}
	if _, err := c.cfg.Management.SetMemberRole(g.Request.Context(), m, id, role); err != nil {
		status, code := httperr.Status(err)
		switch status {
		case http.StatusBadRequest:
			refuse(status, "Choose ADMIN or MEMBER ("+code+").")
		case http.StatusNotFound:
			if !m.Principal().InstanceAdmin {
				// The use case's one answer for a non-member, whether the account exists or not.
				refuse(status, fmt.Sprintf("Account %d is no member of %s. Invite people by login.", id, m.Workspace().Slug))
				return
			}
			refuse(status, fmt.Sprintf("There is no account %d.", id))
		case http.StatusConflict:
			refuse(status, "That would leave the workspace without an ADMIN ("+code+").")
		default:
			c.fail(g, err)
		}
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/members?changed=%d", Path, m.Workspace().Slug, id))
}

// removeMember removes a member, never the workspace's last ADMIN.
func (c *console) removeMember(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	id, err := accountIDParam(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	if err := c.cfg.Management.RemoveMember(g.Request.Context(), m, id); err != nil {
		if status, code := httperr.Status(err); status == http.StatusConflict {
			c.renderMembers(g, m, status, "The workspace's last ADMIN cannot be removed ("+code+").", membersView{})
			return
		}
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/members?removed=%d", Path, m.Workspace().Slug, id))
}

// lifetimeText is workspace.InvitationLifetime as the pages say it.
var lifetimeText = fmt.Sprintf("%d days", int(workspace.InvitationLifetime.Hours()/24))

// invite invites a person by login (as POST /api/workspaces/{ws}/invitations): every valid
// login gets the same answer.
func (c *console) invite(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	login, role := strings.TrimSpace(g.PostForm("login")), g.PostForm("role")
	if err := c.cfg.Management.Invite(g.Request.Context(), m, login, role); err != nil {
		status, code := httperr.Status(err)
		if status != http.StatusBadRequest {
			c.fail(g, err)
			return
		}
		msg := "Choose ADMIN or MEMBER (" + code + ")."
		if code == "invalid-login" {
			msg = "A login is letters, digits and . _ @ + - (" + code + ")."
		}
		c.renderMembers(g, m, status, msg, membersView{Login: login, InviteRole: role})
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/members?invited=1", Path, m.Workspace().Slug))
}

// acceptInvitation makes the signed-in account a member through one of its own invitations
// and opens the workspaces, which then list the workspace. Anyone else's invitation, an
// expired or an accepted one is the same "not found".
func (c *console) acceptInvitation(g *gin.Context) {
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	j, err := c.cfg.Management.AcceptInvitation(g.Request.Context(), sessionOf(g).principal, id)
	if err != nil {
		if status, _ := httperr.Status(err); status == http.StatusNotFound {
			c.render(g, status, "error", page{Title: "Invitation not found",
				Message: "This invitation is not yours, has expired or was accepted already."})
			return
		}
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, Path+"/workspaces?joined="+url.QueryEscape(j.Workspace.Slug))
}
