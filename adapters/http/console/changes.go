package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

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
