package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/application/management"
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

// parsePages parses every page with the layout and the partials it shares.
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

// render answers page name with status, filling the layout's session fields from the request.
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

// idParam is the positive id of the path; anything else names no row (ports.ErrNotFound).
func idParam(g *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(g.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, ports.ErrNotFound
	}
	return id, nil
}

// manageRow is manage and pathID together: the managed workspace of the path and the id of
// the row it names (false: answered, the caller returns).
func (c *console) manageRow(g *gin.Context) (management.Managed, int64, bool) {
	m, ok := c.manage(g)
	if !ok {
		return management.Managed{}, 0, false
	}
	id, ok := c.pathID(g)
	return m, id, ok
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

// prettyJSON indents a stored JSON document for reading (as stored when it does not parse).
func prettyJSON(doc []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc, "", "  "); err != nil {
		return string(doc)
	}
	return buf.String()
}
