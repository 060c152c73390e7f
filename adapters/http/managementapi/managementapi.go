// Package managementapi serves the management API of CONTRACT.md: workspaces, accounts,
// members, connections, lifecycle transitions and subscriptions. It also exports the bearer
// authentication, the workspace authorisation (RequireManager to manage a workspace,
// RequireMember to read it) and the paging helpers that the other /api routes (dead letters,
// inbox, erasure, the mirrors' read APIs) reuse.
package managementapi

import (
	"bytes"
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
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
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
	// Who: the instance administrator only (the use case refuses anyone else with 403).
	api.GET("/admin/accounts", h.listAccounts)
	// Account and token routes: the instance administrator only (the use cases check it, so a
	// workspace ADMIN or MEMBER gets 403); rotation is any account's own.
	api.DELETE("/admin/accounts/:accountId", h.disableAccount)
	api.POST("/admin/accounts/:accountId/tokens", h.issueToken)
	api.GET("/admin/accounts/:accountId/tokens", h.listTokens)
	api.DELETE("/admin/accounts/:accountId/tokens/:tokenId", h.revokeToken)
	api.POST("/me/tokens/rotate", h.rotateOwnToken)
	// Who: any authenticated caller, for its own invitations (by its account's login; the
	// instance administrator token has none).
	api.GET("/me/invitations", h.myInvitations)
	api.POST("/me/invitations/:id/accept", h.acceptInvitation)

	ws := api.Group("/workspaces/:"+WorkspaceParam, RequireManager(svc))
	// Who: the instance administrator and the workspace's ADMINs (RequireManager). The PUT
	// adds any account for the instance administrator; a workspace ADMIN only changes the role
	// of an existing member (any other id: 404) and invites people by login instead.
	ws.GET("/members", h.listMembers)
	ws.PUT("/members/:accountId", h.setMember)
	ws.DELETE("/members/:accountId", h.removeMember)
	ws.POST("/invitations", h.invite)
	ws.POST("/connections", h.createConnection)
	ws.GET("/connections", h.listConnections)
	ws.POST("/connections/:id/activate", h.transition(connection.Activate))
	ws.POST("/connections/:id/suspend", h.transition(connection.Suspend))
	ws.POST("/connections/:id/uninstall", h.transition(connection.Uninstall))
	ws.PUT("/connections/:id/subscriptions", h.setSubscriptions)
	// Who: the instance administrator and the workspace's ADMINs (RequireManager), like the PUT.
	ws.GET("/connections/:id/subscriptions", h.subscriptions)
	// Who: the instance administrator and the workspace's ADMINs (RequireManager).
	ws.PUT("/connections/:id/secret", h.replaceSecret)
	// Who: the instance administrator and the workspace's ADMINs (RequireManager), like the
	// secret.
	ws.PUT("/connections/:id/api-token", h.replaceAPIToken)
}

// fail answers err through the one error map, logging what becomes a 500.
func (h handlers) fail(c *gin.Context, err error) {
	if status, _ := httperr.Status(err); status == http.StatusInternalServerError && h.log != nil {
		h.log.Errorw("management request failed", "method", c.Request.Method, "route", c.FullPath(), "error", err.Error())
	}
	httperr.Write(c, err)
}

// bindJSON decodes a management request body (at most maxBodyBytes) with BindJSON.
func bindJSON(c *gin.Context, v any) error { return BindJSON(c, v, maxBodyBytes) }

// BindJSON decodes a body of at most limit bytes strictly, for every API that takes JSON: an
// unknown field is a caller's mistake worth a 400, not something to ignore silently.
func BindJSON(c *gin.Context, v any, limit int64) error {
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return ports.ErrTooLarge
	}
	// What PostgreSQL would refuse in a text or jsonb column (a NUL, a lone surrogate escape,
	// invalid UTF-8) is refused here with 400, before any statement runs.
	var pe *inbox.PayloadError
	if err == nil && errors.As(inbox.ValidatePayload(raw), &pe) && pe.Reason != inbox.PayloadNotJSON {
		return ports.Reject(ports.ErrMalformed, pe.Reason, "")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err != nil || dec.Decode(v) != nil {
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
	// HasAPIToken: for kinds that accept a provider API token (OUTLINE), whether one is
	// stored; the token itself is never shown.
	HasAPIToken *bool `json:"hasApiToken,omitempty"`
	// Access and AccessReason: for kinds whose subscriptions are checked with the
	// connection's own credential (GITHUB_PAT), UNVERIFIED "token-missing" without one.
	Access       string `json:"access,omitempty"`
	AccessReason string `json:"accessReason,omitempty"`
	CreatedAt    string `json:"createdAt"`
	UpdatedAt    string `json:"updatedAt"`
}

// toConnectionJSON shows a connection. ports.StoredConnection has no secret, so none can leak.
func (h handlers) toConnectionJSON(c ports.StoredConnection) connectionJSON {
	out := toConnectionJSON(c)
	access, reason := h.svc.ConnectionAccess(c)
	out.Access, out.AccessReason = access.String(), reason
	return out
}

// ConnectionView is the connection as this API shows it, for the change feed's
// connection.state_changed (wired into the connection store by bootstrap).
func ConnectionView(svc *management.Service) func(ports.StoredConnection) any {
	h := handlers{svc: svc}
	return func(c ports.StoredConnection) any { return h.toConnectionJSON(c) }
}

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
		HasAPIToken:     hasAPIToken(c),
		CreatedAt:       timestamp(c.CreatedAt),
		UpdatedAt:       timestamp(c.UpdatedAt),
	}
}

// hasAPIToken is shown only for kinds that accept a token, so other kinds' JSON is unchanged.
func hasAPIToken(c ports.StoredConnection) *bool {
	if !c.Kind.AcceptsAPIToken() {
		return nil
	}
	has := c.HasAPIToken
	return &has
}

func (h handlers) createConnection(c *gin.Context) {
	var req struct {
		Kind            string         `json:"kind"`
		SourceServerURL string         `json:"sourceServerUrl"`
		Config          map[string]any `json:"config"`
		Secret          string         `json:"secret"`
		APIToken        string         `json:"apiToken"`
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
		APIToken:        req.APIToken,
	})
	if err != nil {
		h.logRefusal(c, "connection refused", 0, err)
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, h.toConnectionJSON(conn))
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
		out[i] = h.toConnectionJSON(it)
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
			h.logRefusal(c, "lifecycle change refused", id, err)
			h.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, h.toConnectionJSON(conn))
	}
}

type resourceJSON struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// subscribedJSON is a stored subscription: the resource and whether the provider vouches for
// the workspace's access to it (VERIFIED, UNVERIFIED, REVOKED), why not, and when it was
// last checked with the connection's credential.
type subscribedJSON struct {
	resourceJSON
	Access          string `json:"access"`
	AccessReason    string `json:"accessReason,omitempty"`
	AccessCheckedAt string `json:"accessCheckedAt,omitempty"`
}

func toSubscriptionsJSON(set []ports.SubscribedResource) gin.H {
	out := make([]subscribedJSON, len(set))
	for i, r := range set {
		out[i] = subscribedJSON{resourceJSON: resourceJSON{Type: r.Type, ID: r.ID, Name: r.Name},
			Access: r.Access.String(), AccessReason: r.AccessReason}
		if r.AccessCheckedAt != nil {
			out[i].AccessCheckedAt = timestamp(*r.AccessCheckedAt)
		}
	}
	return gin.H{"resources": out}
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
		h.logRefusal(c, "subscription refused", id, err)
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toSubscriptionsJSON(set))
}

// logRefusal logs a connection or subscription change refused for tenant isolation (403
// install-flow-required or resource-not-accessible, 409 installation- or team-already-connected),
// refused as bad input (400: invalid-resource, name-mismatch, …) or left undecided by the
// provider (503), with its reason and cause: a kind name, a kebab-case cause, the resource's
// type and id or a status, never a token or a request body.
func (h handlers) logRefusal(c *gin.Context, msg string, connectionID int64, err error) {
	var rej *ports.RejectedError
	if h.log == nil || !errors.As(err, &rej) ||
		!(errors.Is(err, ports.ErrForbidden) || errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrUnavailable) ||
			errors.Is(err, ports.ErrMalformed)) {
		return
	}
	h.log.Infow(msg, "workspace", ManagedOf(c).Workspace().Slug, "connectionId", connectionID,
		"reason", rej.Reason, "detail", rej.Detail)
}

func (h handlers) subscriptions(c *gin.Context) {
	id, err := idParam(c, "id")
	if err != nil {
		h.fail(c, err)
		return
	}
	set, err := h.svc.Subscriptions(c.Request.Context(), ManagedOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toSubscriptionsJSON(set))
}

// replaceSecret sets a connection's secret ({"secret":"…"}) and answers the connection, never
// the secret.
func (h handlers) replaceSecret(c *gin.Context) {
	id, err := idParam(c, "id")
	if err != nil {
		h.fail(c, err)
		return
	}
	var req struct {
		Secret string `json:"secret"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	conn, err := h.svc.ReplaceSecret(c.Request.Context(), ManagedOf(c), id, req.Secret)
	if err != nil {
		h.logRefusal(c, "secret refused", id, err)
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.toConnectionJSON(conn))
}

// replaceAPIToken sets a connection's provider API token ({"token":"…"}, CONTRACT.md; the
// earlier {"apiToken":"…"} is still read) and answers the connection, never the token.
func (h handlers) replaceAPIToken(c *gin.Context) {
	id, err := idParam(c, "id")
	if err != nil {
		h.fail(c, err)
		return
	}
	var req struct {
		Token    string `json:"token"`
		APIToken string `json:"apiToken"`
	}
	if err := bindJSON(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	token := req.Token
	if token == "" {
		token = req.APIToken
	} else if req.APIToken != "" {
		h.fail(c, ports.Reject(ports.ErrMalformed, "invalid-api-token", "give the token once, as \"token\""))
		return
	}
	conn, err := h.svc.ReplaceAPIToken(c.Request.Context(), ManagedOf(c), id, token)
	if err != nil {
		h.logRefusal(c, "api token refused", id, err)
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.toConnectionJSON(conn))
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
