package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Syncs is the sync use case the sync API calls too (*backfill.Service): the console shows a
// connection's backfill progress and starts them again.
type Syncs interface {
	Restart(ctx context.Context, workspaceID, connectionID int64) (backfill.Progress, error)
	Progress(ctx context.Context, workspaceID, connectionID int64) (backfill.Progress, error)
	Overview(ctx context.Context, workspaceID int64) ([]backfill.ConnectionState, error)
}

// reasonConnectionNotActive is the reason the sync use case refuses a restart with (409).
const reasonConnectionNotActive = "connection-not-active"

// syncRunning is the overall state of a connection with a queued or running backfill.
const syncRunning = "RUNNING"

// syncRefreshSeconds is how often the sync page reloads itself while a backfill runs.
const syncRefreshSeconds = 5

// syncView is a connection's backfill progress as the pages show it.
type syncView struct {
	// Available: the server wired the sync use case (without it the pages say so).
	Available bool
	State     string
	Resources []resourceView
}

type resourceView struct {
	Type, ID, State string
	Items, Pages    int64
	StartedAt       time.Time
	FinishedAt      time.Time
	// LastError is the classified failure label (see errorLabel), empty when none.
	LastError string
}

// errorLabelPattern is what a classified failure reason looks like ("provider-rate-limit",
// "provider-unreadable", "contention", "unknown", …).
var errorLabelPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

// errorLabel is the classified reason a job stored as its last error. The runner stores only
// classified reasons; anything else (never expected) is shown as "unknown", so no raw provider
// or database message reaches a page.
func errorLabel(stored string) string {
	if stored == "" {
		return ""
	}
	if !errorLabelPattern.MatchString(stored) {
		return "unknown"
	}
	return stored
}

func newSyncView(p backfill.Progress) syncView {
	v := syncView{Available: true, State: p.State, Resources: make([]resourceView, 0, len(p.Resources))}
	for _, r := range p.Resources {
		rv := resourceView{Type: r.Type, ID: r.ID, State: r.State.String(), Items: r.Items, Pages: r.Pages,
			LastError: errorLabel(r.LastError)}
		if r.StartedAt != nil {
			rv.StartedAt = *r.StartedAt
		}
		if r.FinishedAt != nil {
			rv.FinishedAt = *r.FinishedAt
		}
		v.Resources = append(v.Resources, rv)
	}
	return v
}

// progress reads a connection's sync progress for a page (unavailable without the use case).
func (c *console) progress(ctx context.Context, workspaceID, connectionID int64) (syncView, error) {
	if c.cfg.Syncs == nil {
		return syncView{}, nil
	}
	p, err := c.cfg.Syncs.Progress(ctx, workspaceID, connectionID)
	if err != nil {
		return syncView{}, err
	}
	return newSyncView(p), nil
}

// syncPage is the data of the connection sync page.
type syncPage struct {
	Connection int64
	// CanRestart: the principal may start the sync again (the workspace's ADMIN or the instance
	// administrator, as POST …/sync); a MEMBER sees the progress only.
	CanRestart bool
	Sync       syncView
}

// syncProgress is a connection's sync page (/console/workspaces/{ws}/connections/{id}/sync):
// the same use case and member rule as GET /api/workspaces/{ws}/connections/{id}/sync (every
// member and the instance administrator; 403 for others, 404 for an unknown workspace or a
// connection of another workspace), with the "Sync again" button for those who may manage it.
func (c *console) syncProgress(g *gin.Context) {
	if c.cfg.Syncs == nil {
		c.fail(g, ports.ErrNotFound)
		return
	}
	ctx := g.Request.Context()
	p := sessionOf(g).principal
	ws, err := managementapi.MemberWorkspace(ctx, c.cfg.Members, p, g.Param("ws"))
	if err != nil {
		c.fail(g, err)
		return
	}
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	view, err := c.progress(ctx, ws.ID, id)
	if err != nil {
		c.fail(g, err)
		return
	}
	canRestart := true
	if _, err := c.cfg.Management.Manage(ctx, p, ws.Slug); err != nil {
		if !errors.Is(err, ports.ErrForbidden) {
			c.fail(g, err)
			return
		}
		canRestart = false
	}
	// The notice names what the console did, never text from the URL.
	var notice string
	if g.Query("restarted") == "1" {
		notice = fmt.Sprintf("The sync of connection %d started again: its backfills are queued.", id)
	}
	// While a backfill runs the page reloads itself (a meta refresh: no script).
	refresh := 0
	if view.State == syncRunning {
		refresh = syncRefreshSeconds
	}
	c.render(g, http.StatusOK, "sync", page{Title: fmt.Sprintf("Sync of connection %d · %s", id, ws.Slug), Workspace: ws.Slug,
		Notice: notice, Refresh: refresh, Data: syncPage{Connection: id, CanRestart: canRestart, Sync: view}})
}

// syncOverview is the workspace's sync page (/console/workspaces/{ws}/sync): each connection
// with backfills, its provider and overall state, linked to its sync page. Who: every member of
// the workspace and the instance administrator (as the connection sync pages), so a MEMBER,
// who may not list the connections, finds each connection's progress; 403 for others, 404 for
// an unknown workspace. It shows nothing of a connection but its id, provider and sync state.
func (c *console) syncOverview(g *gin.Context) {
	ctx := g.Request.Context()
	ws, err := managementapi.MemberWorkspace(ctx, c.cfg.Members, sessionOf(g).principal, g.Param("ws"))
	if err != nil {
		c.fail(g, err)
		return
	}
	data := syncOverview{}
	if c.cfg.Syncs != nil {
		if data.Connections, err = c.cfg.Syncs.Overview(ctx, ws.ID); err != nil {
			c.fail(g, err)
			return
		}
		data.Available = true
	}
	c.render(g, http.StatusOK, "syncs", page{Title: "Sync progress · " + ws.Slug, Workspace: ws.Slug, Data: data})
}

// syncOverview is the data of the workspace sync page.
type syncOverview struct {
	// Available: the server wired the sync use case.
	Available   bool
	Connections []backfill.ConnectionState
}

// restartSync starts every backfill of the connection again through the use case of
// POST /api/workspaces/{ws}/connections/{id}/sync (ADMIN or instance administrator; the
// session's CSRF token was checked). A connection that is not ACTIVE is 409 with a message
// saying so.
func (c *console) restartSync(g *gin.Context) {
	if c.cfg.Syncs == nil {
		c.fail(g, ports.ErrNotFound)
		return
	}
	m, id, ok := c.manageRow(g)
	if !ok {
		return
	}
	slug := m.Workspace().Slug
	if _, err := c.cfg.Syncs.Restart(g.Request.Context(), m.Workspace().ID, id); err != nil {
		var rej *ports.RejectedError
		if errors.As(err, &rej) && rej.Reason == reasonConnectionNotActive {
			c.render(g, http.StatusConflict, "error", page{Title: "Not synced", Workspace: slug,
				Message: fmt.Sprintf("Connection %d is not active (%s), so it cannot sync. Activate it first, then sync again.", id, rej.Detail)})
			return
		}
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/connections/%d/sync?restarted=1", Path, slug, id))
}
