// Package managementapi serves the management API of CONTRACT.md: workspaces, accounts,
// members, connections, lifecycle transitions and subscriptions. It also exports the bearer
// authentication, the workspace authorisation (RequireManager to manage a workspace,
// RequireMember to read it) and the paging helpers that the other /api routes (dead letters,
// inbox, erasure, the mirrors' read APIs) reuse.
package managementapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// maxBodyBytes bounds a management request body; a subscription set of thousands of
// resources fits easily.
const maxBodyBytes = 1 << 20

type handlers struct {
	svc *management.Service
	log ports.Logger
}

// Register adds the management routes to r. log receives the cause of 500 answers (nil: not
// logged); it never receives a request body, so no secret or token reaches it.
func Register(r gin.IRouter, svc *management.Service, log ports.Logger) {
	h := handlers{svc: svc, log: log}
	api := r.Group("/api", RequireAuth(svc))

	api.POST("/admin/workspaces", h.createWorkspace)
	api.DELETE("/admin/workspaces/:"+WorkspaceParam, h.deleteWorkspace)
	api.POST("/admin/accounts", h.createAccount)
	// Account and token routes: the instance administrator only (the use cases check it, so a
	// workspace ADMIN or MEMBER gets 403); rotation is any account's own.
	api.DELETE("/admin/accounts/:accountId", h.disableAccount)
	api.POST("/admin/accounts/:accountId/tokens", h.issueToken)
	api.GET("/admin/accounts/:accountId/tokens", h.listTokens)
	api.DELETE("/admin/accounts/:accountId/tokens/:tokenId", h.revokeToken)
	api.POST("/me/tokens/rotate", h.rotateOwnToken)

	ws := api.Group("/workspaces/:"+WorkspaceParam, RequireManager(svc))
	ws.PUT("/members/:accountId", h.setMember)
	ws.DELETE("/members/:accountId", h.removeMember)
	ws.POST("/connections", h.createConnection)
	ws.GET("/connections", h.listConnections)
	ws.POST("/connections/:id/activate", h.transition(connection.Activate))
	ws.POST("/connections/:id/suspend", h.transition(connection.Suspend))
	ws.POST("/connections/:id/uninstall", h.transition(connection.Uninstall))
	ws.PUT("/connections/:id/subscriptions", h.setSubscriptions)
}

// fail answers err through the one error map, logging what becomes a 500.
func (h handlers) fail(c *gin.Context, err error) {
	if status, _ := httperr.Status(err); status == http.StatusInternalServerError && h.log != nil {
		h.log.Errorw("management request failed", "method", c.Request.Method, "route", c.FullPath(), "error", err.Error())
	}
	httperr.Write(c, err)
}

// bindJSON decodes a bounded body strictly: an unknown field is a caller's mistake worth a 400,
// not something to ignore silently.
func bindJSON(c *gin.Context, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return ports.ErrTooLarge
		}
		return ports.Reject(ports.ErrMalformed, "invalid-json", "")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ports.Reject(ports.ErrMalformed, "invalid-json", "trailing data")
	}
	return nil
}

// idParam reads a positive id from the path; anything else names no row (404).
func idParam(c *gin.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, ports.ErrNotFound
	}
	return id, nil
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

type workspaceJSON struct {
	ID        int64  `json:"id"`
	Slug      string `json:"slug"`
	Name      string `json:"name"`
	State     string `json:"state"`
	CreatedAt string `json:"createdAt"`
}

func toWorkspaceJSON(w ports.Workspace) workspaceJSON {
	return workspaceJSON{ID: w.ID, Slug: w.Slug, Name: w.Name, State: w.State, CreatedAt: timestamp(w.CreatedAt)}
}

func (h handlers) createWorkspace(c *gin.Context) {
	var req struct {
		Slug string `json:"slug"`
		Name string `json:"name"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	ws, err := h.svc.CreateWorkspace(c.Request.Context(), PrincipalOf(c), req.Slug, req.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toWorkspaceJSON(ws))
}

func (h handlers) deleteWorkspace(c *gin.Context) {
	if err := h.svc.DeleteWorkspace(c.Request.Context(), PrincipalOf(c), c.Param(WorkspaceParam)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h handlers) createAccount(c *gin.Context) {
	var req struct {
		Login         string `json:"login"`
		InstanceAdmin bool   `json:"instanceAdmin"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	acc, err := h.svc.CreateAccount(c.Request.Context(), PrincipalOf(c), req.Login, req.InstanceAdmin)
	if err != nil {
		h.fail(c, err)
		return
	}
	// The one answer that carries a token: it is not stored and cannot be shown again.
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, gin.H{
		"id":            acc.ID,
		"login":         acc.Login,
		"instanceAdmin": acc.InstanceAdmin,
		"token":         acc.Token,
		"createdAt":     timestamp(acc.CreatedAt),
	})
}

func (h handlers) setMember(c *gin.Context) {
	accountID, err := idParam(c, "accountId")
	if err != nil {
		h.fail(c, err)
		return
	}
	var req struct {
		Role string `json:"role"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	m, err := h.svc.SetMemberRole(c.Request.Context(), ManagedOf(c), accountID, req.Role)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"accountId": m.AccountID, "role": m.Role.String()})
}

type connectionJSON struct {
	ID              int64          `json:"id"`
	Kind            string         `json:"kind"`
	Provider        string         `json:"provider"`
	State           string         `json:"state"`
	SourceServerURL string         `json:"sourceServerUrl"`
	Config          map[string]any `json:"config"`
	ConfigVersion   int64          `json:"configVersion"`
	WebhookURL      string         `json:"webhookUrl,omitempty"`
	CreatedAt       string         `json:"createdAt"`
	UpdatedAt       string         `json:"updatedAt"`
}

// toConnectionJSON shows a connection. ports.StoredConnection has no secret, so none can leak.
func toConnectionJSON(c ports.StoredConnection) connectionJSON {
	return connectionJSON{
		ID:              c.ID,
		Kind:            c.Kind.String(),
		Provider:        c.Kind.Provider().String(),
		State:           c.State.String(),
		SourceServerURL: c.SourceServerURL,
		Config:          c.Config,
		ConfigVersion:   c.ConfigVersion,
		WebhookURL:      management.WebhookURL(c),
		CreatedAt:       timestamp(c.CreatedAt),
		UpdatedAt:       timestamp(c.UpdatedAt),
	}
}

func (h handlers) createConnection(c *gin.Context) {
	var req struct {
		Kind            string         `json:"kind"`
		SourceServerURL string         `json:"sourceServerUrl"`
		Config          map[string]any `json:"config"`
		Secret          string         `json:"secret"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	conn, err := h.svc.CreateConnection(c.Request.Context(), ManagedOf(c), management.ConnectionRequest{
		Kind:            req.Kind,
		SourceServerURL: req.SourceServerURL,
		Config:          req.Config,
		Secret:          req.Secret,
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toConnectionJSON(conn))
}

func (h handlers) listConnections(c *gin.Context) {
	page, err := Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	items, total, err := h.svc.ListConnections(c.Request.Context(), ManagedOf(c), page)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]connectionJSON, len(items))
	for i, it := range items {
		out[i] = toConnectionJSON(it)
	}
	c.JSON(http.StatusOK, NewPage(out, page, total))
}

func (h handlers) transition(action connection.Action) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := idParam(c, "id")
		if err != nil {
			h.fail(c, err)
			return
		}
		conn, err := h.svc.Transition(c.Request.Context(), ManagedOf(c), id, action)
		if err != nil {
			h.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, toConnectionJSON(conn))
	}
}

type resourceJSON struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

type subscriptionsJSON struct {
	Resources []resourceJSON `json:"resources"`
}

func (h handlers) setSubscriptions(c *gin.Context) {
	id, err := idParam(c, "id")
	if err != nil {
		h.fail(c, err)
		return
	}
	// A pointer, so that a body without "resources" is refused instead of clearing the set.
	var req struct {
		Resources *[]resourceJSON `json:"resources"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	if req.Resources == nil {
		h.fail(c, ports.Reject(ports.ErrMalformed, "invalid-json", "resources missing"))
		return
	}
	in := make([]ports.SubscribedResource, len(*req.Resources))
	for i, r := range *req.Resources {
		in[i] = ports.SubscribedResource{Type: r.Type, ID: r.ID, Name: r.Name}
	}
	set, err := h.svc.SetSubscriptions(c.Request.Context(), ManagedOf(c), id, in)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := subscriptionsJSON{Resources: make([]resourceJSON, len(set))}
	for i, r := range set {
		out.Resources[i] = resourceJSON{Type: r.Type, ID: r.ID, Name: r.Name}
	}
	c.JSON(http.StatusOK, out)
}

func (h handlers) removeMember(c *gin.Context) {
	accountID, err := idParam(c, "accountId")
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.svc.RemoveMember(c.Request.Context(), ManagedOf(c), accountID); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
