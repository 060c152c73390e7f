// Package installflow serves the install flows of CONTRACT.md ("Install flows"):
//
//   - POST /api/workspaces/{ws}/connections/{flow}/install, one per provider flow
//     (ports.InstallFlow.Name): bearer
//     token of the workspace's ADMIN or the instance administrator (managementapi.RequireAuth
//     and RequireManager: 401 without a valid token, 403 for a MEMBER or a non-member, 404 for
//     no such workspace) → 200 {"installUrl": …}.
//   - GET {flow's CallbackPath}, e.g. /connect/<provider>/callback: no bearer token (the provider
//     sends the person's browser); the signed, single-use state is the authorisation. They
//     answer a plain HTML page, never JSON and never a token.
package installapi

import (
	"fmt"
	"html/template"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type handlers struct {
	flows *installflow.Service
}

// Register adds the install routes to r.
func Register(r gin.IRouter, flows *installflow.Service, mgmt *management.Service) {
	h := handlers{flows: flows}
	ws := r.Group("/api/workspaces/:"+managementapi.WorkspaceParam, managementapi.RequireAuth(mgmt), managementapi.RequireManager(mgmt))
	for _, flow := range flows.Flows() {
		ws.POST("/connections/"+flow.Name()+"/install", h.start(flow))
		r.GET(flow.CallbackPath(), h.callback(flow))
	}
}

func (h handlers) start(flow ports.InstallFlow) gin.HandlerFunc {
	return func(c *gin.Context) {
		u, err := h.flows.Start(c.Request.Context(), flow, managementapi.ManagedOf(c))
		if err != nil {
			httperr.Write(c, err)
			return
		}
		// The link holds a live state: no cache keeps it.
		c.Header("Cache-Control", "no-store")
		c.JSON(http.StatusOK, gin.H{"installUrl": u})
	}
}

// callback completes flow with the provider's redirect query.
func (h handlers) callback(flow ports.InstallFlow) gin.HandlerFunc {
	return func(c *gin.Context) {
		page(c, flow.Title(), h.flows.Finish(c.Request.Context(), flow, c.Request.URL.Query()))
	}
}

// pages: status and sentence per result. Every sentence says what happened and what to do.
var pages = map[installflow.Result]struct {
	status  int
	title   string
	message string
}{
	installflow.Connected:        {http.StatusOK, "Connected", "The %s connection was created for your workspace. You can close this page."},
	installflow.InvalidLink:      {http.StatusBadRequest, "Link expired or invalid", "This %s install link has expired, was already used, or is invalid. Start the installation again from Hephaestus."},
	installflow.NotListed:        {http.StatusForbidden, "Installation not yours", "%s does not list this installation for your account, so it was not connected. Install the app on an account or organisation you administer, then start again from Hephaestus."},
	installflow.AlreadyConnected: {http.StatusConflict, "Already connected", "This %s installation is already connected to a workspace. Uninstall that connection first if it should move."},
	installflow.Retry:            {http.StatusBadGateway, "Please retry", "%s or Hephaestus could not complete the installation just now; nothing was created. Please retry: start the installation again from Hephaestus."},
	installflow.Requested:        {http.StatusOK, "Installation requested", "The %s installation was requested; an owner of the account must approve it. Start again from Hephaestus once it is approved."},
	installflow.Declined:         {http.StatusOK, "Installation cancelled", "The %s installation was cancelled; nothing was created."},
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Hephaestus</title></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p>{{if .ConnectionID}}<p>Connection id: {{.ConnectionID}}</p>{{end}}</body></html>
`))

func page(c *gin.Context, provider string, o installflow.Outcome) {
	p, ok := pages[o.Result]
	if !ok {
		p = pages[installflow.Retry]
	}
	var id int64
	if o.Result == installflow.Connected {
		id = o.Connection.ID
	}
	// The URL carries a code and a state: no cache keeps the page, no Referer carries them on.
	c.Header("Cache-Control", "no-store")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Content-Security-Policy", "default-src 'none'")
	c.Status(p.status)
	c.Header("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(c.Writer, struct {
		Title, Message string
		ConnectionID   int64
	}{p.title, fmt.Sprintf(p.message, provider), id})
}
