package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// page is what every template gets: the layout's fields and the page's own Data.
type page struct {
	Title     string
	Message   string
	Notice    string
	SignedIn  bool
	Admin     bool
	CSRF      string
	Workspace string
	// Refresh, when set, reloads the page every Refresh seconds (a meta refresh, no script).
	Refresh int
	Data    any
}

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"query": func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		if len(v) == 0 {
			return ""
		}
		return "?" + v.Encode()
	},
}

var pageNames = []string{"signin", "error", "workspaces", "deadletters", "deadletter", "confirm", "connections", "changes", "erasure", "sync", "syncs", "install",
	"deliveries", "delivery", "rejections"}

func parsePages() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/progress.html", "templates/pager.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

func (c *console) render(g *gin.Context, status int, name string, p page) {
	if v, ok := g.Get(sessionKey); ok {
		s := v.(session)
		p.SignedIn, p.Admin, p.CSRF = true, s.principal.InstanceAdmin, s.csrf
	}
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, p); err != nil {
		if c.cfg.Log != nil {
			c.cfg.Log.Errorw("console template failed", "page", name, "error", err.Error())
		}
		g.String(http.StatusInternalServerError, "internal error")
		return
	}
	g.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// manage is the workspace of the path as the session's principal may manage it: the API's
// RequireManager check (404 unknown, 403 not an ADMIN of it).
func (c *console) manage(g *gin.Context) (management.Managed, bool) {
	m, err := c.cfg.Management.Manage(g.Request.Context(), sessionOf(g).principal, g.Param("ws"))
	if err != nil {
		c.fail(g, err)
		return management.Managed{}, false
	}
	return m, true
}

func idParam(g *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(g.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, ports.ErrNotFound
	}
	return id, nil
}

// pathID reads the positive id of the path; anything else names no row and is answered 404
// here (false: the caller returns).
func (c *console) pathID(g *gin.Context) (int64, bool) {
	id, err := idParam(g)
	if err != nil {
		c.fail(g, err)
		return 0, false
	}
	return id, true
}

// workspaceCard is one workspace of the overview.
type workspaceCard struct {
	Slug, Name, State string
	// Operator: the principal may manage it (ADMIN or instance administrator); a MEMBER sees
	// the workspace without its inbox.
	Operator        bool
	Counts          []stateCount
	OldestQueuedAge string
	Busiest         []ports.ScopeBacklog
	Chart           chart
}

type stateCount struct {
	State string
	Count int64
}

func (c *console) workspaces(g *gin.Context) {
	ctx := g.Request.Context()
	p := sessionOf(g).principal
	items, total, err := c.cfg.Management.VisibleWorkspaces(ctx, p, ports.PageRequest{Page: 0, Size: 200})
	if err != nil {
		c.fail(g, err)
		return
	}
	cards := make([]workspaceCard, 0, len(items))
	for _, ws := range items {
		card := workspaceCard{Slug: ws.Slug, Name: ws.Name, State: ws.State}
		m, err := c.cfg.Management.Manage(ctx, p, ws.Slug)
		if err == nil {
			o, err := c.cfg.Dead.Inbox(ctx, m)
			if err != nil {
				c.fail(g, err)
				return
			}
			a, err := c.cfg.Dead.Activity(ctx, m)
			if err != nil {
				c.fail(g, err)
				return
			}
			card.Operator = true
			for _, s := range inbox.States() {
				card.Counts = append(card.Counts, stateCount{State: s.String(), Count: o.Counts[s]})
			}
			card.OldestQueuedAge = o.OldestQueuedAge.Truncate(time.Second).String()
			card.Busiest = o.BusiestScopes
			card.Chart = newChart(a, time.Now())
		}
		cards = append(cards, card)
	}
	// The account's own pending invitations, each with its accept button (as
	// GET /api/me/invitations; the configured administrator token has none).
	invitations, _, err := c.cfg.Management.PendingInvitations(ctx, p, ports.PageRequest{Page: 0, Size: 50})
	if err != nil {
		c.fail(g, err)
		return
	}
	// The notice names a workspace as listed, never text of the URL.
	var notice string
	if joined := g.Query("joined"); joined != "" {
		for _, card := range cards {
			if card.Slug == joined {
				notice = fmt.Sprintf("You are a member of %s (%s).", card.Name, card.Slug)
			}
		}
	}
	c.render(g, http.StatusOK, "workspaces", page{Title: "Workspaces", Notice: notice, Data: struct {
		Cards       []workspaceCard
		Total       int
		Invitations []ports.Invitation
	}{cards, total, invitations}})
}

// deadLetterList is the dead-letter page: the filter as given and one page of rows.
type deadLetterList struct {
	Base   string // the page's path, for links and the filter form
	Filter ports.DeadLetterFilter
	Items  []inbox.Delivery
	Total  int
	Page   int
	Prev   int
	Next   int
}

func filterOf(g *gin.Context) ports.DeadLetterFilter {
	return ports.DeadLetterFilter{Provider: g.Query("provider"), EventType: g.Query("eventType"), ErrorClass: g.Query("errorClass")}
}

func pageOf(g *gin.Context) ports.PageRequest {
	n, err := strconv.Atoi(g.Query("page"))
	if err != nil || n < 0 || n > 1_000_000 {
		n = 0
	}
	return ports.PageRequest{Page: n, Size: 50}
}

func listPage(base string, f ports.DeadLetterFilter, req ports.PageRequest, items []inbox.Delivery, total int) deadLetterList {
	l := deadLetterList{Base: base, Filter: f, Items: items, Total: total, Page: req.Page, Prev: -1, Next: -1}
	if req.Page > 0 {
		l.Prev = req.Page - 1
	}
	if (req.Page+1)*req.Size < total {
		l.Next = req.Page + 1
	}
	return l
}

func (c *console) deadLetters(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	f, req := filterOf(g), pageOf(g)
	items, total, err := c.cfg.Dead.List(g.Request.Context(), m, f, req)
	title, base := "Dead letters · "+m.Workspace().Slug, Path+"/workspaces/"+m.Workspace().Slug+"/dead-letters"
	if message, ok := invalidInput(err); ok {
		c.render(g, http.StatusBadRequest, "deadletters", page{Title: title, Workspace: m.Workspace().Slug, Message: message,
			Data: listPage(base, f, req, nil, 0)})
		return
	}
	if err != nil {
		c.fail(g, err)
		return
	}
	c.render(g, http.StatusOK, "deadletters", page{Title: title, Workspace: m.Workspace().Slug,
		Notice: notice(g), Data: listPage(base, f, req, items, total)})
}

func (c *console) installationDeadLetters(g *gin.Context) {
	f, req := filterOf(g), pageOf(g)
	items, total, err := c.cfg.Dead.ListInstallation(g.Request.Context(), sessionOf(g).principal, f, req)
	if message, ok := invalidInput(err); ok {
		c.render(g, http.StatusBadRequest, "deadletters", page{Title: "Installation dead letters", Message: message,
			Data: listPage(Path+"/admin/dead-letters", f, req, nil, 0)})
		return
	}
	if err != nil {
		c.fail(g, err)
		return
	}
	c.render(g, http.StatusOK, "deadletters", page{Title: "Installation dead letters", Notice: notice(g),
		Data: listPage(Path+"/admin/dead-letters", f, req, items, total)})
}

func notice(g *gin.Context) string {
	if id := g.Query("replayed"); id != "" {
		if _, err := strconv.ParseInt(id, 10, 64); err == nil {
			return "Dead letter " + id + " was replayed: it is QUEUED again."
		}
	}
	return ""
}

// deadLetterView is one dead letter with its payload and headers pretty-printed.
type deadLetterView struct {
	Base     string // the list's path
	Delivery inbox.Delivery
	Payload  string
	Headers  []header
}

type header struct{ Name, Value string }

// prettyJSON indents a stored JSON document for reading (as stored when it does not parse).
func prettyJSON(doc []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc, "", "  "); err != nil {
		return string(doc)
	}
	return buf.String()
}

func newDeadLetterView(base string, d ports.DeadLetter) deadLetterView {
	v := deadLetterView{Base: base, Delivery: d.Delivery, Payload: prettyJSON(d.Payload)}
	for name, value := range d.Headers {
		v.Headers = append(v.Headers, header{Name: name, Value: value})
	}
	sort.Slice(v.Headers, func(i, j int) bool { return v.Headers[i].Name < v.Headers[j].Name })
	return v
}

func (c *console) deadLetter(g *gin.Context) { c.showDeadLetter(g, "deadletter") }

func (c *console) confirmReplay(g *gin.Context) { c.showDeadLetter(g, "confirm") }

func (c *console) showDeadLetter(g *gin.Context, tmpl string) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	d, err := c.cfg.Dead.DeadLetter(g.Request.Context(), m, id)
	if err != nil {
		c.fail(g, err)
		return
	}
	slug := m.Workspace().Slug
	c.render(g, http.StatusOK, tmpl, page{Title: fmt.Sprintf("Dead letter %d · %s", id, slug), Workspace: slug,
		Data: newDeadLetterView(Path+"/workspaces/"+slug+"/dead-letters", d)})
}

func (c *console) installationDeadLetter(g *gin.Context) {
	c.showInstallationDeadLetter(g, "deadletter")
}

func (c *console) confirmInstallationReplay(g *gin.Context) {
	c.showInstallationDeadLetter(g, "confirm")
}

func (c *console) showInstallationDeadLetter(g *gin.Context, tmpl string) {
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	d, err := c.cfg.Dead.InstallationDeadLetter(g.Request.Context(), sessionOf(g).principal, id)
	if err != nil {
		c.fail(g, err)
		return
	}
	c.render(g, http.StatusOK, tmpl, page{Title: fmt.Sprintf("Installation dead letter %d", id),
		Data: newDeadLetterView(Path+"/admin/dead-letters", d)})
}

func (c *console) replay(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	if _, err := c.cfg.Dead.Replay(g.Request.Context(), m, id); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/dead-letters?replayed=%d", Path, m.Workspace().Slug, id))
}

func (c *console) replayInstallation(g *gin.Context) {
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	if _, err := c.cfg.Dead.ReplayInstallation(g.Request.Context(), sessionOf(g).principal, id); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/admin/dead-letters?replayed=%d", Path, id))
}

// connectionView is one connection with its subscriptions and the transitions its state allows.
type connectionView struct {
	Conn          ports.StoredConnection
	Access        string
	AccessReason  string
	Subscriptions []ports.SubscribedResource
	Actions       []string
	Sync          syncView
}

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

func (c *console) transition(g *gin.Context) {
	if g.Param("action") == "sync" {
		c.restartSync(g)
		return
	}
	m, ok := c.manage(g)
	if !ok {
		return
	}
	id, ok := c.pathID(g)
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

// feedPageSize is how many changes the feed page shows after its cursor.
const feedPageSize = 50

// feedRefreshSeconds is how often the feed page reloads itself (a meta refresh: no script).
const feedRefreshSeconds = 5

// changeView is one change of the feed page, its data pretty-printed.
type changeView struct {
	Cursor, Type, Subject, Data string
	OccurredAt                  time.Time
}

// changes is the live change feed of the workspace (CONTRACT.md "Change feed"), read through
// the same feed service and member rule as GET /api/workspaces/{ws}/changes, reloading itself
// every few seconds with a meta refresh (no script; the CSP has no directive that governs a
// meta refresh, and the reload is a same-origin GET). Without ?after= it opens at the head of
// the feed: the newest changes, newest first, so every reload shows what just happened. With
// ?after= it pages forward from that cursor in feed order ("Follow from here" on the head, or
// ?after=0-0 from the oldest change kept), so a reader who must see every change misses none.
func (c *console) changes(g *gin.Context) {
	p := sessionOf(g).principal
	if c.cfg.Changes == nil {
		m, ok := c.manage(g)
		if !ok {
			return
		}
		c.render(g, http.StatusOK, "changes", page{Title: "Change feed · " + m.Workspace().Slug, Workspace: m.Workspace().Slug})
		return
	}
	ctx := g.Request.Context()
	ws, err := managementapi.MemberWorkspace(ctx, c.cfg.Members, p, g.Param("ws"))
	if err != nil {
		c.fail(g, err)
		return
	}
	raw := g.Query("after")
	// Both reads check the principal again in their page's snapshot and show a MEMBER the
	// connection.* changes without what only ADMINs may see, as the API does.
	who := ports.FeedReader{WorkspaceID: ws.ID, Principal: p}
	var items []change.Stored
	if raw == "" {
		items, err = c.cfg.Changes.Latest(ctx, who, feedPageSize)
	} else {
		after, perr := change.ParseCursor(raw)
		if perr != nil {
			c.fail(g, fmt.Errorf("change feed cursor: %w", ports.ErrMalformed))
			return
		}
		items, err = c.cfg.Changes.ReadAs(ctx, who, after, feedPageSize, 0)
	}
	if errors.Is(err, change.ErrCursorExpired) {
		// Retention deleted changes after this cursor: open the head again.
		g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/changes", Path, ws.Slug))
		return
	}
	if err != nil {
		c.fail(g, err)
		return
	}
	data := struct {
		Available bool
		Head      bool   // the newest changes, newest first
		After     string // the cursor the page continues from ("" on the head)
		Next      string // the cursor of the newest change shown
		Refresh   int
		Changes   []changeView
	}{Available: true, Head: raw == "", After: raw, Refresh: feedRefreshSeconds}
	for _, ch := range items {
		data.Changes = append(data.Changes, changeView{Cursor: ch.Cursor.String(), Type: ch.Type, Subject: ch.Subject,
			Data: prettyJSON(ch.Data), OccurredAt: ch.OccurredAt})
	}
	if n := len(items); n > 0 {
		data.Next = items[n-1].Cursor.String()
	}
	if data.Head {
		slices.Reverse(data.Changes)
	}
	c.render(g, http.StatusOK, "changes", page{Title: "Change feed · " + ws.Slug, Workspace: ws.Slug, Refresh: feedRefreshSeconds, Data: data})
}
