// Package syncapi is the sync routes of the management API (CONTRACT.md "Sync and teardown"):
//
//	POST /api/workspaces/{ws}/connections/{id}/sync   start every backfill again → 202 progress
//	GET  /api/workspaces/{ws}/connections/{id}/sync   the backfills' progress → 200
//
// Who may call: starting a sync manages the workspace (the instance administrator and the
// workspace's ADMINs, managementapi.RequireManager, as for the connection's other actions);
// reading progress manages nothing (any member, and the instance administrator,
// managementapi.RequireMember, as the mirrors' read APIs). 401 without a valid token, 403 for
// a known workspace the caller may not use so, 404 for an unknown workspace or a connection
// of another workspace.
package syncapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Syncs is the use case behind the routes (*backfill.Service).
type Syncs interface {
	Restart(ctx context.Context, workspaceID, connectionID int64) (backfill.Progress, error)
	Progress(ctx context.Context, workspaceID, connectionID int64) (backfill.Progress, error)
}

// Authority authenticates and authorises callers (*management.Service).
type Authority interface {
	managementapi.Authenticator
	managementapi.Manager
}

// Config is what the routes need; every field is required but Log.
type Config struct {
	Auth    Authority
	Members managementapi.Members
	Syncs   Syncs
	Log     ports.Logger
}

// Register adds the sync routes to r.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Auth == nil || cfg.Members == nil || cfg.Syncs == nil {
		return errors.New("sync api: auth, members and syncs are required")
	}
	h := handler{cfg: cfg}
	path := "/api/workspaces/:" + managementapi.WorkspaceParam + "/connections/:id/sync"
	r.POST(path, managementapi.RequireAuth(cfg.Auth), managementapi.RequireManager(cfg.Auth), h.restart)
	r.GET(path, managementapi.RequireAuth(cfg.Auth), managementapi.RequireMember(cfg.Members), h.progress)
	return nil
}

type handler struct{ cfg Config }

func (h handler) restart(c *gin.Context) {
	id, ok := h.id(c)
	if !ok {
		return
	}
	p, err := h.cfg.Syncs.Restart(c.Request.Context(), managementapi.ManagedOf(c).Workspace().ID, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, toJSON(p))
}

func (h handler) progress(c *gin.Context) {
	id, ok := h.id(c)
	if !ok {
		return
	}
	p, err := h.cfg.Syncs.Progress(c.Request.Context(), managementapi.MemberWorkspaceOf(c).ID, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toJSON(p))
}

func (h handler) id(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		httperr.Write(c, ports.ErrNotFound)
		return 0, false
	}
	return id, true
}

func (h handler) fail(c *gin.Context, err error) {
	if status, _ := httperr.Status(err); status == http.StatusInternalServerError && h.cfg.Log != nil {
		h.cfg.Log.Errorw("sync request failed", "method", c.Request.Method, "route", c.FullPath(), "error", err.Error())
	}
	httperr.Write(c, err)
}

type progressJSON struct {
	State     string         `json:"state"`
	Resources []resourceJSON `json:"resources"`
}

type resourceJSON struct {
	Type       string  `json:"type"`
	ID         string  `json:"id"`
	State      string  `json:"state"`
	Items      int64   `json:"items"`
	Pages      int64   `json:"pages"`
	StartedAt  *string `json:"startedAt"`
	FinishedAt *string `json:"finishedAt"`
	LastError  *string `json:"lastError"`
}

func toJSON(p backfill.Progress) progressJSON {
	out := progressJSON{State: p.State, Resources: make([]resourceJSON, 0, len(p.Resources))}
	for _, r := range p.Resources {
		j := resourceJSON{Type: r.Type, ID: r.ID, State: r.State.String(), Items: r.Items, Pages: r.Pages,
			StartedAt: stamp(r.StartedAt), FinishedAt: stamp(r.FinishedAt)}
		if r.LastError != "" {
			e := r.LastError
			j.LastError = &e
		}
		out.Resources = append(out.Resources, j)
	}
	return out
}

func stamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}
