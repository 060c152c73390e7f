package console

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// connectionView is one connection with its subscriptions and the transitions its state allows.
type connectionView struct {
	Conn          ports.StoredConnection
	Access        string
	AccessReason  string
	Subscriptions []ports.SubscribedResource
	Actions       []string
	Sync          syncView
}

// connections lists a managed workspace's connections with their subscriptions, sync progress
// and the transitions the principal may apply.
func (c *console) connections(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	ctx := g.Request.Context()
	items, _, err := c.cfg.Management.ListConnections(ctx, m, ports.PageRequest{Page: 0, Size: 200})
	if err != nil {
		c.fail(g, err)
		return
	}
	// The notice after a transition names the connection's state as stored, never text from the
	// URL, so a crafted link cannot make the console say something it did not do.
	changed, _ := strconv.ParseInt(g.Query("changed"), 10, 64)
	var notice string
	views := make([]connectionView, 0, len(items))
	for _, conn := range items {
		if changed > 0 && conn.ID == changed {
			notice = fmt.Sprintf("Connection %d is %s.", conn.ID, conn.State)
		}
		subs, err := c.cfg.Management.Subscriptions(ctx, m, conn.ID)
		if err != nil {
			c.fail(g, err)
			return
		}
		access, reason := c.cfg.Management.ConnectionAccess(conn)
		sync, err := c.progress(ctx, m.Workspace().ID, conn.ID)
		if err != nil {
			c.fail(g, err)
			return
		}
		v := connectionView{Conn: conn, Access: access.String(), AccessReason: reason, Subscriptions: subs, Sync: sync}
		for _, a := range []connection.Action{connection.Activate, connection.Suspend, connection.Uninstall} {
			if _, err := conn.State.Next(a); err == nil && !c.cfg.Management.InstallFlowRequired(m, conn, a) {
				v.Actions = append(v.Actions, a.String())
			}
		}
		views = append(views, v)
	}
	c.render(g, http.StatusOK, "connections", page{Title: "Connections · " + m.Workspace().Slug, Workspace: m.Workspace().Slug,
		Notice: notice, Data: views})
}

// transition applies the lifecycle action of the path (or restarts a sync) and returns to the
// list, which names the new state.
func (c *console) transition(g *gin.Context) {
	if g.Param("action") == "sync" {
		c.restartSync(g)
		return
	}
	m, id, ok := c.manageRow(g)
	if !ok {
		return
	}
	action, err := connection.ParseAction(g.Param("action"))
	if err != nil {
		c.fail(g, ports.ErrNotFound)
		return
	}
	conn, err := c.cfg.Management.Transition(g.Request.Context(), m, id, action)
	if err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/connections?changed=%d", Path, m.Workspace().Slug, conn.ID))
}
