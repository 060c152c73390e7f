// Package installapi serves the install flows of CONTRACT.md ("Install flows"):
//
//   - POST /api/workspaces/{ws}/connections/{flow}/install, one per provider flow
//     (contract.InstallFlow.Name): bearer token of the workspace's ADMIN or the instance
//     administrator (managementapi.RequireAuth and RequireManager: 401 without a valid token,
//     403 for a MEMBER or a non-member, 404 for no such workspace) → 200 {"installUrl": …}, and
//     Set-Cookie of the flow's browser binding (installflow.CookieName; HttpOnly,
//     SameSite=Lax, Path=/connect/, expiring with the state, Secure per
//     Config.SecureCookies). The browser that will come back from the provider must be the
//     one that asked (the console, or a fetch from a page of this server); a link started
//     with curl cannot complete.
//   - GET {flow's CallbackPath}, e.g. /connect/<provider>/callback: no bearer token (the provider
//     sends the person's browser); the signed, single-use state and the browser cookie are the
//     authorisation, and the token that started the flow must still authenticate (403 "Access
//     revoked" once it is revoked, rotated or expired, its account disabled, or the configured
//     administrator token changed). It answers a confirmation page naming the workspace, with a
//     form that POSTs to the same path with a CSRF token; nothing is created on GET.
//   - POST {flow's CallbackPath}: the confirmation (application/x-www-form-urlencoded, at
//     most maxFormBytes, the cookie and the CSRF token required, the starting token checked
//     again before and after the provider's answer) creates the connection, and the page says
//     which workspace it joined.
//
// They answer a plain HTML page, never JSON and never a token.
package installapi

import (
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// maxFormBytes bounds the confirmation form (a state, a code, a CSRF token and a few ids).
const maxFormBytes = 8 << 10

// CookiePath is where the browser sends the install cookies: the callbacks only.
const CookiePath = "/connect/"

// Config is how the install routes answer.
type Config struct {
	// SecureCookies marks the flow's cookie Secure on every answer, also on a plain-HTTP
	// request behind a TLS proxy (bootstrap: HEPHAESTUS_COOKIE_SECURE, else an https
	// HEPHAESTUS_PUBLIC_URL). False: Secure only when the request came over TLS.
	SecureCookies bool
}

type handlers struct {
	flows *installflow.Service
	cfg   Config
}

// Register adds the install routes to r.
func Register(r gin.IRouter, flows *installflow.Service, mgmt *management.Service, cfg Config) {
	h := handlers{flows: flows, cfg: cfg}
	ws := r.Group("/api/workspaces/:"+managementapi.WorkspaceParam, managementapi.RequireAuth(mgmt), managementapi.RequireManager(mgmt))
	for _, flow := range flows.Flows() {
		ws.POST("/connections/"+flow.Name()+"/install", h.start(flow))
		r.GET(flow.CallbackPath(), h.review(flow))
		r.POST(flow.CallbackPath(), h.confirm(flow))
	}
}

// SetCookie sets flow's browser binding on the answer (also for the console's start); secure
// marks it Secure whatever the request's transport (Config.SecureCookies).
func SetCookie(c *gin.Context, flow contract.InstallFlow, s installflow.Started, secure bool) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: installflow.CookieName(flow.Name()), Value: s.Cookie, Path: CookiePath,
		Expires: s.Expires, MaxAge: max(1, int(time.Until(s.Expires).Seconds())),
		HttpOnly: true, Secure: secure || c.Request.TLS != nil, SameSite: http.SameSiteLaxMode,
	})
}

func (h handlers) start(flow contract.InstallFlow) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, err := h.flows.Start(c.Request.Context(), flow, managementapi.ManagedOf(c))
		if err != nil {
			httperr.Write(c, err)
			return
		}
		SetCookie(c, flow, s, h.cfg.SecureCookies)
		// The link holds a live state: no cache keeps it.
		c.Header("Cache-Control", "no-store")
		c.JSON(http.StatusOK, gin.H{"installUrl": s.URL})
	}
}

func cookieOf(c *gin.Context, flow contract.InstallFlow) string {
	v, err := c.Cookie(installflow.CookieName(flow.Name()))
	if err != nil {
		return ""
	}
	return v
}

// review answers the provider's redirect with the confirmation page (or why not).
func (h handlers) review(flow contract.InstallFlow) gin.HandlerFunc {
	return func(c *gin.Context) {
		page(c, flow, h.flows.Review(c.Request.Context(), flow, c.Request.URL.Query(), cookieOf(c, flow)))
	}
}

// confirm creates the connection from the confirmation form.
func (h handlers) confirm(flow contract.InstallFlow) gin.HandlerFunc {
	return func(c *gin.Context) {
		mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
		if err != nil || mt != "application/x-www-form-urlencoded" {
			page(c, flow, installflow.Outcome{Result: installflow.InvalidLink})
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxFormBytes)
		if err := c.Request.ParseForm(); err != nil {
			page(c, flow, installflow.Outcome{Result: installflow.InvalidLink})
			return
		}
		page(c, flow, h.flows.Finish(c.Request.Context(), flow, c.Request.PostForm, cookieOf(c, flow)))
	}
}

// pages: status and sentence per result. Every sentence says what happened and what to do.
var pages = map[installflow.Result]struct {
	status  int
	title   string
	message string
}{
	installflow.Confirm:          {http.StatusOK, "Confirm the connection", "Connect this %s installation to the Hephaestus workspace below? Nothing is connected until you confirm."},
	installflow.Connected:        {http.StatusOK, "Connected", "The %s connection was created for the workspace below. You can close this page."},
	installflow.InvalidLink:      {http.StatusBadRequest, "Link expired or invalid", "This %s install link has expired, was already used, or is invalid. Start the installation again from Hephaestus."},
	installflow.OtherBrowser:     {http.StatusForbidden, "Started in another browser", "This %s install link was not started in this browser (or its cookie expired), so nothing was connected. Start the installation again from Hephaestus, in this browser."},
	installflow.NotListed:        {http.StatusForbidden, "Installation not yours", "%s does not list this installation for your account, so it was not connected. Install the app on an account or organisation you administer, then start again from Hephaestus."},
	installflow.NotAdmin:         {http.StatusForbidden, "Not an administrator", "You do not administer the account this %s installation belongs to (an organisation's active admin, or the user account itself), so it was not connected. Ask an administrator of that account to start the installation from Hephaestus."},
	installflow.AlreadyConnected: {http.StatusConflict, "Already connected", "This %s installation is already connected to a workspace. Uninstall that connection first if it should move."},
	installflow.Retry:            {http.StatusBadGateway, "Please retry", "%s or Hephaestus could not complete the installation just now; nothing was created. Please retry: start the installation again from Hephaestus."},
	installflow.Requested:        {http.StatusOK, "Installation requested", "The %s installation was requested; an owner of the account must approve it. Start again from Hephaestus once it is approved."},
	installflow.Declined:         {http.StatusOK, "Installation cancelled", "The %s installation was cancelled; nothing was created."},
	installflow.TokenRevoked:     {http.StatusForbidden, "Access revoked", "The Hephaestus token this %s install link was started with no longer works (it was revoked, rotated or expired, its account was disabled, or the administrator token changed), so nothing was connected. Sign in again and start the installation again from Hephaestus."},
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Hephaestus</title></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p>
{{- if .Workspace}}<p>Workspace: <strong>{{.Workspace}}</strong> ({{.Slug}})</p>{{end}}
{{- if .ConnectionID}}<p>Connection id: {{.ConnectionID}}</p>{{end}}
{{- if .Action}}<form method="post" action="{{.Action}}">
{{- range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}
<button type="submit">Connect to {{.Workspace}}</button></form>{{end}}
</body></html>
`))

type field struct{ Name, Value string }

func page(c *gin.Context, flow contract.InstallFlow, o installflow.Outcome) {
	p, ok := pages[o.Result]
	if !ok {
		p = pages[installflow.Retry]
	}
	data := struct {
		Title, Message, Workspace, Slug, Action string
		ConnectionID                            int64
		Fields                                  []field
	}{Title: p.title, Message: fmt.Sprintf(p.message, flow.Title())}
	switch o.Result {
	case installflow.Confirm:
		data.Workspace, data.Slug, data.Action = o.Workspace.Name, o.Workspace.Slug, flow.CallbackPath()
		data.Fields = fields(o.Form)
	case installflow.Connected:
		data.Workspace, data.Slug, data.ConnectionID = o.Workspace.Name, o.Workspace.Slug, o.Connection.ID
	}
	// The URL and the form carry a code and a state: no cache keeps the page, no Referer
	// carries them on, no frame shows it, and the form posts only here.
	c.Header("Cache-Control", "no-store")
	c.Header("Referrer-Policy", "no-referrer")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("X-Frame-Options", "DENY")
	c.Header("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	c.Status(p.status)
	c.Header("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(c.Writer, data)
}

// fields lists the form's values in a stable order (state and CSRF token first).
func fields(form url.Values) []field {
	out := []field{{installflow.FieldState, form.Get(installflow.FieldState)}, {installflow.FieldCSRF, form.Get(installflow.FieldCSRF)}}
	for k := range form {
		if k != installflow.FieldState && k != installflow.FieldCSRF {
			out = append(out, field{k, form.Get(k)})
		}
	}
	slices.SortFunc(out[2:], func(a, b field) int { return strings.Compare(a.Name, b.Name) })
	return out
}
