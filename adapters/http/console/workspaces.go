package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

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

// stateCount is the number of inbox rows in one state.
type stateCount struct {
	State string
	Count int64
}

// workspaces is the overview: every workspace the principal sees, with its inbox for those it
// may manage, and the account's pending invitations.
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
