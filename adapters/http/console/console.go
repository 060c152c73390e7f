// Package console serves the operator console at /console: server-rendered HTML
// (html/template, embedded with its stylesheet), no JavaScript at all, so reading and replaying
// work in any browser and the Content-Security-Policy forbids every script. It is a second face
// of the same use cases the API calls (management, dead letters, erasure, sync), with the same
// authorisation: a session carries the principal its token authenticated, and every page asks
// the use case as that principal (a member sees only their workspaces, the instance
// administrator sees all).
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Path is where the console is mounted; its cookie is scoped to it.
const Path = "/console"

// CookieName is the session cookie: a random session id, never the token.
const CookieName = "hephaestus_console"

// DefaultSessionTTL is how long a session lasts after sign-in.
const DefaultSessionTTL = 12 * time.Hour

// csp forbids every script (none is served), inline styles and framing; forms post only here.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Sessions is the session table (the console session store, adapters/postgres/consolesession).
type Sessions interface {
	Create(ctx context.Context, id string, p ports.Principal, adminTokenHash, csrf []byte, ttl time.Duration) error
	Lookup(ctx context.Context, id string) (ports.ConsoleSession, error)
	Delete(ctx context.Context, id string) error
}

// Config is what the console needs.
type Config struct {
	Management *management.Service
	Dead       *deadletters.Service
	Erasures   *personerasure.Service
	Sessions   Sessions
	// Members and Changes show the change feed page to every member of the workspace, as the
	// feed API does; without Changes the page says the feed is not available.
	Members managementapi.Members
	Changes *changes.Feed
	// Syncs shows each connection's sync progress (to every member, as GET …/sync) and its
	// "Sync again" button (to who may manage the workspace, as POST …/sync); without it the
	// pages say sync progress is not available. It needs Members.
	Syncs Syncs
	// Installs offers the providers' install flows (CONTRACT.md "Install flows") to who may
	// manage the workspace: starting one here sets the flow's browser cookie in this browser,
	// which the provider's callback requires. Nil: the page says no install flow is available.
	Installs *installflow.Service
	// Deliveries and Rejections show the deliveries browser and the rejection log (to every
	// member of the workspace, as the Operator API; installation rows and every refusal to the
	// instance administrator). Both are required; they need Members.
	Deliveries *deliveries.Service
	Rejections *rejections.Service
	// Reads limits the inbox reads (dead letters, deliveries, rejections, inbox counts) one
	// account has in flight; the API shares it, so the limit holds across both. Required.
	Reads *operatorapi.ReadLimit
	// Replays is bulk replay (the replay API's use cases): its page shows the jobs and the
	// dry-run count to every member and starts and cancels jobs for who may manage the
	// workspace. It needs Members; nil: no bulk replay page.
	Replays Replays
	// TraceURL, when set, links a delivery's page to its trace in the operator's tracing UI: a
	// URL template whose TraceURLPlaceholder is replaced by the trace id (a Grafana Tempo or
	// Jaeger link). Empty: the page shows the trace id alone.
	TraceURL string
	// AdminToken is the configured instance administrator token: a session signed in with it
	// ends when the configured token changes.
	AdminToken string
	SessionTTL time.Duration
	// SecureCookies marks every console cookie Secure, also on a plain-HTTP request behind a
	// TLS proxy (bootstrap: HEPHAESTUS_COOKIE_SECURE, else an https HEPHAESTUS_PUBLIC_URL).
	// False: Secure only when the request came over TLS.
	SecureCookies bool
	Log           ports.Logger
}

// TraceURLPlaceholder is what Config.TraceURL's template names the trace id with.
const TraceURLPlaceholder = "{traceId}"

type console struct {
	cfg       Config
	adminHash []byte
	pages     map[string]*template.Template
}

// Register mounts the console on r. Errors: a missing dependency or a template that does not
// parse.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Management == nil || cfg.Dead == nil || cfg.Erasures == nil || cfg.Sessions == nil ||
		cfg.Deliveries == nil || cfg.Rejections == nil || cfg.Members == nil || cfg.Reads == nil {
		return errors.New("console: management, dead letters, erasures, sessions, deliveries, rejections, members and the read limit are required")
	}
	if cfg.Changes != nil && cfg.Members == nil {
		return errors.New("console: the change feed page needs the members directory")
	}
	if cfg.Syncs != nil && cfg.Members == nil {
		return errors.New("console: the sync page needs the members directory")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	pages, err := parsePages()
	if err != nil {
		return err
	}
	c := &console{cfg: cfg, adminHash: management.HashToken(cfg.AdminToken), pages: pages}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return err
	}

	// Who: anyone (the browser asks for it before any sign-in).
	r.GET("/favicon.ico", favicon)
	g := r.Group(Path, securityHeaders, c.boundForm)
	g.StaticFS("/static", http.FS(static))
	// Who: anyone (the sign-in form and its post).
	g.GET("", c.home)
	g.GET("/sign-in", c.signInForm)
	g.POST("/sign-in", c.signIn)

	// Who: a signed-in session; every POST also needs the session's CSRF token.
	s := g.Group("", c.requireSession)
	s.POST("/sign-out", c.signOut)
	s.GET("/workspaces", c.limitReads, c.workspaces)
	s.GET("/workspaces/:ws/dead-letters", c.limitReads, c.deadLetters)
	s.GET("/workspaces/:ws/dead-letters/:id", c.limitReads, c.deadLetter)
	s.GET("/workspaces/:ws/dead-letters/:id/replay", c.confirmReplay)
	s.POST("/workspaces/:ws/dead-letters/:id/replay", c.replay)
	s.GET("/workspaces/:ws/connections", c.connections)
	// Who: the workspace's ADMIN and the instance administrator (as POST …/{flow}/install).
	s.GET("/workspaces/:ws/install", c.installFlows)
	s.POST("/workspaces/:ws/install/:flow", c.startInstall)
	// …/connections/:id/sync starts the sync again (ADMIN); the other actions are transitions.
	s.POST("/workspaces/:ws/connections/:id/:action", c.transition)
	// Who: every member of the workspace and the instance administrator (as GET …/sync).
	s.GET("/workspaces/:ws/connections/:id/sync", c.syncProgress)
	s.GET("/workspaces/:ws/sync", c.syncOverview)
	s.GET("/workspaces/:ws/changes", c.changes)
	// Who: every member of the workspace and the instance administrator (as the Operator API's
	// GET …/integration/deliveries and …/rejections); the replay button only to its ADMIN.
	s.GET("/workspaces/:ws/deliveries", c.limitReads, c.deliveries)
	s.GET("/workspaces/:ws/deliveries/:id", c.limitReads, c.delivery)
	s.GET("/workspaces/:ws/rejections", c.limitReads, c.rejections)
	// Who: the instance administrator only (the use cases refuse anyone else with 403).
	s.GET("/admin/dead-letters", c.limitReads, c.installationDeadLetters)
	s.GET("/admin/dead-letters/:id", c.limitReads, c.installationDeadLetter)
	s.GET("/admin/dead-letters/:id/replay", c.confirmInstallationReplay)
	s.POST("/admin/dead-letters/:id/replay", c.replayInstallation)
	s.GET("/admin/deliveries", c.limitReads, c.installationDeliveries)
	s.GET("/admin/deliveries/:id", c.limitReads, c.installationDelivery)
	s.GET("/admin/rejections", c.limitReads, c.installationRejections)
	c.registerAdministration(s)
	return c.registerReplays(s)
}

// limitReads holds one of the signed-in account's operator reads for the rest of the request
// (Config.Reads, shared with the API): past the limit the page says to retry (429).
func (c *console) limitReads(g *gin.Context) {
	release, err := c.cfg.Reads.Acquire(sessionOf(g).principal)
	if err != nil {
		g.Header("Retry-After", httperr.RetryAfterSeconds)
		c.fail(g, err)
		return
	}
	defer release()
	g.Next()
}

func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	// Pages show payloads and a CSRF token: no cache keeps them.
	h.Set("Cache-Control", "no-store")
	c.Next()
}

const (
	sessionKey = "hephaestus.console.session"
	sessionID  = "hephaestus.console.sessionId"
)

func randomValue() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("console: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), b, nil
}

// session is the signed-in caller of a request.
type session struct {
	principal ports.Principal
	csrf      string
}

func sessionOf(c *gin.Context) session { return c.MustGet(sessionKey).(session) }

// requireSession finds the live session of the cookie. Without one a page read goes to the
// sign-in form and a POST is refused with 403; a POST whose CSRF token is missing or wrong is
// refused with 403 too (constant-time compare).
func (c *console) requireSession(g *gin.Context) {
	id, err := g.Cookie(CookieName)
	sent := err == nil && id != ""
	var s ports.ConsoleSession
	if sent {
		s, err = c.cfg.Sessions.Lookup(g.Request.Context(), id)
	} else {
		err = ports.ErrNotFound
	}
	if err == nil && s.AdminTokenHash != nil && subtle.ConstantTimeCompare(s.AdminTokenHash, c.adminHash) != 1 {
		// Signed in with an administrator token that is no longer the configured one.
		err = ports.ErrNotFound
	}
	if err != nil {
		if !errors.Is(err, ports.ErrNotFound) {
			c.fail(g, err)
			return
		}
		// Only a cookie the browser sent is cleared (a session that ended). A request without
		// one may come from another site (SameSite=Strict withholds the cookie there): its
		// answer must not touch the visitor's cookies, or any site could sign them out.
		if sent {
			c.clearCookie(g)
		}
		if g.Request.Method == http.MethodGet {
			// The page asked for comes back after sign-in (deepLink).
			g.Redirect(http.StatusSeeOther, signInPath(g.Request.URL.RequestURI()))
			g.Abort()
			return
		}
		c.render(g, http.StatusForbidden, "error", page{Title: "Not signed in", Message: "Your session has ended. Sign in again."})
		g.Abort()
		return
	}
	token := base64.RawURLEncoding.EncodeToString(s.CSRF)
	if g.Request.Method == http.MethodPost {
		posted := g.PostForm("csrf")
		if subtle.ConstantTimeCompare([]byte(posted), []byte(token)) != 1 {
			c.render(g, http.StatusForbidden, "error", page{Title: "Form expired", Message: "This form is not from your current session. Reload the page and try again."})
			g.Abort()
			return
		}
	}
	g.Set(sessionKey, session{principal: s.Principal, csrf: token})
	g.Set(sessionID, id)
	g.Next()
}

func (c *console) setCookie(g *gin.Context, value string, maxAge int) {
	http.SetCookie(g.Writer, &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     Path,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   c.secure(g),
		SameSite: http.SameSiteStrictMode,
	})
}

func (c *console) clearCookie(g *gin.Context) {
	http.SetCookie(g.Writer, &http.Cookie{Name: CookieName, Value: "", Path: Path, MaxAge: -1,
		HttpOnly: true, Secure: c.secure(g), SameSite: http.SameSiteStrictMode})
}

// secure is every console cookie's Secure attribute: always with Config.SecureCookies (the
// browser reaches the server over https through a proxy), else when the request came over TLS.
func (c *console) secure(g *gin.Context) bool { return c.cfg.SecureCookies || g.Request.TLS != nil }

func (c *console) home(g *gin.Context) {
	if id, err := g.Cookie(CookieName); err == nil && id != "" {
		if _, err := c.cfg.Sessions.Lookup(g.Request.Context(), id); err == nil {
			g.Redirect(http.StatusSeeOther, Path+"/workspaces")
			return
		}
	}
	g.Redirect(http.StatusSeeOther, Path+"/sign-in")
}

// signInCookie carries the sign-in form's CSRF token (a double-submit token: the form and the
// cookie must match). Without it a page of another site could post its own token to the form
// and sign the victim's browser in as the attacker (login CSRF); it cannot read the cookie, and
// SameSite=Strict keeps the browser from sending it with a cross-site post.
const signInCookie = "hephaestus_console_signin"

// signInTTL bounds how long a sign-in form can be posted.
const signInTTL = time.Hour

func (c *console) signInForm(g *gin.Context) {
	c.renderSignIn(g, http.StatusOK, "", g.Query(nextField))
}

// renderSignIn answers the sign-in form with a fresh CSRF token in the form and its cookie, and
// the page to open after sign-in when next is one (deepLink).
func (c *console) renderSignIn(g *gin.Context, status int, message, next string) {
	token, _, err := randomValue()
	if err != nil {
		c.fail(g, err)
		return
	}
	http.SetCookie(g.Writer, &http.Cookie{Name: signInCookie, Value: token, Path: Path + "/sign-in",
		MaxAge: int(signInTTL.Seconds()), HttpOnly: true, Secure: c.secure(g), SameSite: http.SameSiteStrictMode})
	c.render(g, status, "signin", page{Title: "Sign in", Message: message, CSRF: token, Data: signInView{Next: deepLink(next)}})
}

// signInCSRF reports whether the posted sign-in form carries the token of its cookie.
func signInCSRF(g *gin.Context) bool {
	want, err := g.Cookie(signInCookie)
	got := g.PostForm("csrf")
	return err == nil && want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// signIn authenticates the token exactly as the API does and starts a session for its
// principal. The token itself is neither stored nor logged; the cookie carries a random id.
func (c *console) signIn(g *gin.Context) {
	if !signInCSRF(g) {
		if _, err := g.Cookie(signInCookie); err != nil {
			// No form cookie: a post from another site (or a form older than its cookie). The
			// refusal sets no cookie; the link opens a fresh form.
			c.render(g, http.StatusForbidden, "error", page{Title: "Sign-in form expired",
				Message: "The sign-in form expired or did not come from this console. Open the sign-in page again."})
			return
		}
		c.renderSignIn(g, http.StatusForbidden, "The sign-in form expired or did not come from this console. Please sign in again.", g.PostForm(nextField))
		return
	}
	token := g.PostForm("token")
	p, err := c.cfg.Management.Authenticate(g.Request.Context(), token)
	if err != nil {
		status, _ := httperr.Status(err)
		if status == http.StatusUnauthorized {
			c.renderSignIn(g, http.StatusUnauthorized, "That token was not accepted.", g.PostForm(nextField))
			return
		}
		c.fail(g, err)
		return
	}
	var adminHash []byte
	if p.IsAdminToken() {
		adminHash = c.adminHash
	}
	id, _, err := randomValue()
	if err != nil {
		c.fail(g, err)
		return
	}
	_, csrf, err := randomValue()
	if err != nil {
		c.fail(g, err)
		return
	}
	if err := c.cfg.Sessions.Create(g.Request.Context(), id, p, adminHash, csrf, c.cfg.SessionTTL); err != nil {
		c.fail(g, err)
		return
	}
	c.setCookie(g, id, int(c.cfg.SessionTTL.Seconds()))
	next := deepLink(g.PostForm(nextField))
	if next == "" {
		next = Path + "/workspaces"
	}
	g.Redirect(http.StatusSeeOther, next)
}

func (c *console) signOut(g *gin.Context) {
	if err := c.cfg.Sessions.Delete(g.Request.Context(), g.GetString(sessionID)); err != nil {
		c.fail(g, err)
		return
	}
	c.clearCookie(g)
	g.Redirect(http.StatusSeeOther, Path+"/sign-in")
}

// fail renders err through the one error map (403, 404, 409, …) as a page; what becomes a 500
// is logged by its type and route only.
func (c *console) fail(g *gin.Context, err error) {
	status, code := httperr.Status(err)
	if status == http.StatusInternalServerError && c.cfg.Log != nil {
		c.cfg.Log.Errorw("console request failed", "method", g.Request.Method, "route", g.FullPath(), "error", fmt.Sprintf("%T", err))
	}
	c.render(g, status, "error", page{Title: http.StatusText(status), Message: messageFor(status, code)})
	g.Abort()
}

func messageFor(status int, code string) string {
	switch status {
	case http.StatusForbidden:
		return "You may not see this. Ask an administrator of the workspace for access."
	case http.StatusNotFound:
		return "There is nothing here, or it is not in a workspace you can see."
	case http.StatusConflict:
		return "That was not possible in the current state (" + code + "). Reload and check."
	case http.StatusServiceUnavailable:
		return "The service is busy. Try again in a moment."
	case http.StatusTooManyRequests:
		return "You have as many inbox pages loading as you may at once. Wait for them, then try again."
	default:
		return "Something went wrong (" + code + ")."
	}
}
