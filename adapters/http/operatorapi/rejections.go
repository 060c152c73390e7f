package operatorapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RegisterRejections adds the rejection log (CONTRACT.md "Operator API") to r: the refusals of
// a workspace's connections for its members whatever their role, and every refusal (those no
// connection matched included) for the instance administrator under /api/admin. Each read
// counts against the caller's reads in flight (reads: 429 retry past them).
func RegisterRejections(r gin.IRouter, auth managementapi.Authenticator, members managementapi.Members, svc *rejections.Service, reads *ReadLimit, log ports.Logger) {
	h := rejectionHandlers{svc: svc, handlers: handlers{log: log}}
	managementapi.MemberRoutes(r, auth, members, "/integration").GET("/rejections", reads.Handler(), h.list)
	r.Group("/api/admin", managementapi.RequireAuth(auth), managementapi.RequireInstanceAdmin()).
		GET("/integration/rejections", reads.Handler(), h.listAll)
}

type rejectionHandlers struct {
	handlers
	svc *rejections.Service
}

// rejectionJSON is one minute of one key; connectionId is null when no connection matched.
type rejectionJSON struct {
	Minute       string `json:"minute"`
	Provider     string `json:"provider"`
	ConnectionID *int64 `json:"connectionId"`
	Reason       string `json:"reason"`
	Count        int64  `json:"count"`
}

func toRejectionJSON(c ports.RejectionCount) rejectionJSON {
	out := rejectionJSON{Minute: timestamp(c.Minute), Provider: c.Provider, Reason: c.Reason, Count: c.Count}
	if c.ConnectionID > 0 {
		id := c.ConnectionID
		out.ConnectionID = &id
	}
	return out
}

func (h rejectionHandlers) answer(c *gin.Context, read func(ports.PageRequest) ([]ports.RejectionCount, int, error)) {
	page, err := managementapi.Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	items, total, err := read(page)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]rejectionJSON, len(items))
	for i, it := range items {
		out[i] = toRejectionJSON(it)
	}
	c.JSON(http.StatusOK, managementapi.NewPage(out, page, total))
}

func (h rejectionHandlers) list(c *gin.Context) {
	ws := managementapi.MemberWorkspaceOf(c)
	h.answer(c, func(p ports.PageRequest) ([]ports.RejectionCount, int, error) {
		return h.svc.List(c.Request.Context(), ws, p)
	})
}

func (h rejectionHandlers) listAll(c *gin.Context) {
	principal := managementapi.PrincipalOf(c)
	h.answer(c, func(p ports.PageRequest) ([]ports.RejectionCount, int, error) {
		return h.svc.ListAll(c.Request.Context(), principal, p)
	})
}
