package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// membersView is a workspace's member page.
type membersView struct {
	Items []ports.Member
	Pager pager
	Roles []string
	// Account and Role keep what was typed when adding was refused.
	Account, Role string
}

var memberRoles = []string{"MEMBER", "ADMIN"}

// members lists the workspace's members, paged, with a role form and a remove button each and
// the form to add one (the workspace's ADMINs and the instance administrator, as
// PUT/DELETE /api/workspaces/{ws}/members/{accountId}).
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
	v.Items, v.Pager, v.Roles = items, newPager(req, total), memberRoles
	// The notice names a member as stored, never text of the URL.
	var notice string
	if changed, err := strconv.ParseInt(g.Query("changed"), 10, 64); err == nil {
		for _, mb := range items {
			if mb.AccountID == changed {
				notice = fmt.Sprintf("%s (%d) is %s of %s.", mb.Login, mb.AccountID, mb.Role, m.Workspace().Slug)
			}
		}
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
