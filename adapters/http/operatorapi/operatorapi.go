// Package operatorapi serves the operators' routes of CONTRACT.md: dead letters and the inbox
// overview of a workspace, the installation's dead letters, and person erasure of the inbox.
// Authentication, the "may manage workspace" check and paging are managementapi's, reused here
// so every /api route answers 401, 403 and 404 the same way.
package operatorapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// maxBodyBytes bounds an erasure request body (at most 100 identities).
const maxBodyBytes = 64 << 10

// Auth is what the routes need from the management use cases; *management.Service is one.
type Auth interface {
	managementapi.Authenticator
	managementapi.Manager
}

type handlers struct {
	dead    *deadletters.Service
	erasure *personerasure.Service
	log     ports.Logger
}

// Register adds the operator routes to r. Their reads of the inbox count against the caller's
// reads in flight (reads). log receives the cause of 500 answers (nil: not logged); it never
// receives a request body, a payload or an identity value.
func Register(r gin.IRouter, auth Auth, dead *deadletters.Service, erasures *personerasure.Service, reads *ReadLimit, log ports.Logger) {
	h := handlers{dead: dead, erasure: erasures, log: log}
	api := r.Group("/api", managementapi.RequireAuth(auth))

	// Workspace rows: the workspace's ADMIN or the instance administrator (RequireManager:
	// 404 unknown workspace, 403 a caller who may not manage it).
	ws := api.Group("/workspaces/:"+managementapi.WorkspaceParam+"/integration", managementapi.RequireManager(auth))
	ws.GET("/dead-letters", reads.Handler(), h.listDead)
	ws.GET("/dead-letters/:id", reads.Handler(), h.getDead)
	ws.POST("/dead-letters/:id/replay", h.replayDead)
	ws.GET("/inbox", reads.Handler(), h.inbox)

	// Installation rows and erasure: the instance administrator only.
	admin := api.Group("/admin", managementapi.RequireInstanceAdmin())
	admin.GET("/integration/dead-letters", reads.Handler(), h.listInstallationDead)
	admin.GET("/integration/dead-letters/:id", reads.Handler(), h.getInstallationDead)
	admin.POST("/integration/dead-letters/:id/replay", h.replayInstallationDead)
	admin.POST("/erasures/preview", h.previewErasure)
	admin.POST("/erasures", h.startErasure)
	admin.GET("/erasures/:id", h.getErasure)
	admin.POST("/erasures/:id/resume", h.resumeErasure)
}

// fail answers err through the one error map, logging what becomes a 500 by route and cause
// types: a database error's message can quote the values of a statement, and erasure
// statements carry identity values.
func (h handlers) fail(c *gin.Context, err error) {
	if status, _ := httperr.Status(err); status == http.StatusInternalServerError && h.log != nil {
		h.log.Errorw("operator request failed", "method", c.Request.Method, "route", c.FullPath(),
			"causes", inbox.CauseTypes(err))
	}
	httperr.Write(c, err)
}

// idParam reads a positive id from the path; anything else names no row (404).
func idParam(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, ports.ErrNotFound
	}
	return id, nil
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// optionalTimestamp is null for a zero time.
func optionalTimestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}

// bindJSON decodes an operator request body (at most maxBodyBytes) strictly.
func bindJSON(c *gin.Context, v any) error { return managementapi.BindJSON(c, v, maxBodyBytes) }
