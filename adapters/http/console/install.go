package console

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/installapi"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// installView is the install page: the configured flows, or the link of the one just started.
type installView struct {
	Flows []installFlowView
	// Started: the provider's install link, followed as a plain link (the console's
	// form-action 'self' would stop a form's redirect to the provider).
	Started      string
	StartedTitle string
}

type installFlowView struct{ Name, Title string }

func (c *console) flow(name string) (contract.InstallFlow, bool) {
	if c.cfg.Installs == nil {
		return nil, false
	}
	for _, f := range c.cfg.Installs.Flows() {
		if f.Name() == name && f.Configured() {
			return f, true
		}
	}
	return nil, false
}

// installFlows lists the configured install flows with a start button each.
func (c *console) installFlows(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	var v installView
	if c.cfg.Installs != nil {
		for _, f := range c.cfg.Installs.Flows() {
			if f.Configured() {
				v.Flows = append(v.Flows, installFlowView{Name: f.Name(), Title: f.Title()})
			}
		}
	}
	c.render(g, http.StatusOK, "install", page{Title: "Connect a provider · " + m.Workspace().Slug, Workspace: m.Workspace().Slug, Data: v})
}

// startInstall starts flow for the workspace in this browser: the answer sets the flow's
// browser cookie, and the page links to the provider's install page.
func (c *console) startInstall(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	f, ok := c.flow(g.Param("flow"))
	if !ok {
		c.fail(g, ports.ErrNotFound)
		return
	}
	started, err := c.cfg.Installs.Start(g.Request.Context(), f, m)
	if err != nil {
		c.fail(g, err)
		return
	}
	installapi.SetCookie(g, f, started, c.cfg.SecureCookies)
	c.render(g, http.StatusOK, "install", page{Title: "Connect " + f.Title() + " · " + m.Workspace().Slug, Workspace: m.Workspace().Slug,
		Data: installView{Started: started.URL, StartedTitle: f.Title()}})
}
