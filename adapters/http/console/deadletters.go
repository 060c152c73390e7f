package console

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

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

// filterOf is the dead-letter filter of the query, as given.
func filterOf(g *gin.Context) ports.DeadLetterFilter {
	return ports.DeadLetterFilter{Provider: g.Query("provider"), EventType: g.Query("eventType"), ErrorClass: g.Query("errorClass")}
}

// pageOf is the page of the query (the first for none or a number out of range), 50 rows.
func pageOf(g *gin.Context) ports.PageRequest {
	n, err := strconv.Atoi(g.Query("page"))
	if err != nil || n < 0 || n > 1_000_000 {
		n = 0
	}
	return ports.PageRequest{Page: n, Size: 50}
}

// listPage is the dead-letter page of items, with the neighbouring pages (-1 for none).
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

// deadLetters lists the dead letters of a workspace the principal may manage.
func (c *console) deadLetters(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	f, req := filterOf(g), pageOf(g)
	items, total, err := c.cfg.Dead.List(g.Request.Context(), m, f, req)
	slug := m.Workspace().Slug
	c.renderDeadLetters(g, page{Title: "Dead letters · " + slug, Workspace: slug}, Path+"/workspaces/"+slug+"/dead-letters",
		f, req, items, total, err)
}

// installationDeadLetters lists the dead letters of installation rows (instance administrator).
func (c *console) installationDeadLetters(g *gin.Context) {
	f, req := filterOf(g), pageOf(g)
	items, total, err := c.cfg.Dead.ListInstallation(g.Request.Context(), sessionOf(g).principal, f, req)
	c.renderDeadLetters(g, page{Title: "Installation dead letters"}, Path+"/admin/dead-letters", f, req, items, total, err)
}

// renderDeadLetters answers one page of a dead-letter list at base: 400 without rows for a
// filter the store refuses as invalid input.
func (c *console) renderDeadLetters(g *gin.Context, p page, base string, f ports.DeadLetterFilter, req ports.PageRequest,
	items []inbox.Delivery, total int, err error) {
	if message, ok := invalidInput(err); ok {
		p.Message, p.Data = message, listPage(base, f, req, nil, 0)
		c.render(g, http.StatusBadRequest, "deadletters", p)
		return
	}
	if err != nil {
		c.fail(g, err)
		return
	}
	p.Notice, p.Data = notice(g), listPage(base, f, req, items, total)
	c.render(g, http.StatusOK, "deadletters", p)
}

// notice confirms a replay the redirect named by its numeric id, never other text of the URL.
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

// newDeadLetterView is d for reading, its headers sorted by name.
func newDeadLetterView(base string, d ports.DeadLetter) deadLetterView {
	v := deadLetterView{Base: base, Delivery: d.Delivery, Payload: prettyJSON(d.Payload)}
	for name, value := range d.Headers {
		v.Headers = append(v.Headers, header{Name: name, Value: value})
	}
	sort.Slice(v.Headers, func(i, j int) bool { return v.Headers[i].Name < v.Headers[j].Name })
	return v
}

// deadLetter shows a dead letter of a managed workspace, and confirmReplay its replay form.
func (c *console) deadLetter(g *gin.Context) { c.showDeadLetter(g, "deadletter") }

func (c *console) confirmReplay(g *gin.Context) { c.showDeadLetter(g, "confirm") }

// showDeadLetter renders a managed workspace's dead letter of the path with template tmpl.
func (c *console) showDeadLetter(g *gin.Context, tmpl string) {
	m, id, ok := c.manageRow(g)
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

// installationDeadLetter and confirmInstallationReplay are deadLetter and confirmReplay for
// installation rows (instance administrator).
func (c *console) installationDeadLetter(g *gin.Context) {
	c.showInstallationDeadLetter(g, "deadletter")
}

func (c *console) confirmInstallationReplay(g *gin.Context) {
	c.showInstallationDeadLetter(g, "confirm")
}

// showInstallationDeadLetter renders the installation dead letter of the path with tmpl.
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

// replay sends a managed workspace's dead letter back to QUEUED and returns to the list.
func (c *console) replay(g *gin.Context) {
	m, id, ok := c.manageRow(g)
	if !ok {
		return
	}
	if _, err := c.cfg.Dead.Replay(g.Request.Context(), m, id); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/dead-letters?replayed=%d", Path, m.Workspace().Slug, id))
}

// replayInstallation is replay for an installation row (instance administrator).
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
