package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/application/personerasure"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// erasureFormRows is how many identity rows the erasure form offers (a person rarely has more
// accounts on one source; more are erased by a second request).
const erasureFormRows = 5

// erasureRefreshSeconds is how often a RUNNING erasure's page reloads itself (a meta refresh).
const erasureRefreshSeconds = 5

// erasureForm is the preview and start form as posted: the same request as the API's body.
// Identity values are shown only on the pages of the instance administrator who posts them,
// never logged nor put in a URL (the start redirects to the erasure's id).
type erasureForm struct {
	Provider        string
	SourceServerURL string
	Identities      []personerasure.Identity
}

// Rows is the form's identity rows: the posted ones, then empty rows up to erasureFormRows.
func (f erasureForm) Rows() []personerasure.Identity {
	rows := append([]personerasure.Identity(nil), f.Identities...)
	for len(rows) < erasureFormRows {
		rows = append(rows, personerasure.Identity{})
	}
	return rows
}

func (f erasureForm) request() personerasure.Request {
	return personerasure.Request{Provider: f.Provider, SourceServerURL: f.SourceServerURL, Identities: f.Identities}
}

// erasureFormOf reads the posted form: identityId, identityLogin and identityEmail are repeated
// once per row, in row order; a row with all three empty is no identity. Rows beyond what the
// arrays align are refused as malformed rather than guessed.
func erasureFormOf(g *gin.Context) (erasureForm, error) {
	f := erasureForm{Provider: strings.TrimSpace(g.PostForm("provider")), SourceServerURL: strings.TrimSpace(g.PostForm("sourceServerUrl"))}
	ids, logins, emails := g.PostFormArray("identityId"), g.PostFormArray("identityLogin"), g.PostFormArray("identityEmail")
	if len(ids) != len(logins) || len(ids) != len(emails) {
		return f, ports.Reject(ports.ErrMalformed, personerasure.ReasonInvalidErasure, "identity rows")
	}
	for i := range ids {
		id := personerasure.Identity{ID: strings.TrimSpace(ids[i]), Login: strings.TrimSpace(logins[i]), Email: strings.TrimSpace(emails[i])}
		if id != (personerasure.Identity{}) {
			f.Identities = append(f.Identities, id)
		}
	}
	return f, nil
}

// erasuresView is the erasure form page, with the preview's counts after a preview.
type erasuresView struct {
	Form      erasureForm
	Previewed bool
	Matches   []storeMatches
	Total     int64
	LookupID  string
}

type storeMatches struct {
	Store   string
	Matches int64
}

func (c *console) requireInstanceAdmin(g *gin.Context) (ports.Principal, bool) {
	p := sessionOf(g).principal
	if !p.InstanceAdmin {
		c.fail(g, ports.ErrForbidden)
		return ports.Principal{}, false
	}
	return p, true
}

// erasures is the erasure page: the form to preview a person erasure, and a look-up by id
// (?id=… goes to that erasure's progress, as the earlier page's form did).
func (c *console) erasures(g *gin.Context) {
	if _, ok := c.requireInstanceAdmin(g); !ok {
		return
	}
	if raw := g.Query("id"); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			c.fail(g, ports.ErrNotFound)
			return
		}
		g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/admin/erasures/%d", Path, id))
		return
	}
	c.render(g, http.StatusOK, "erasures", page{Title: "Erasures", Data: erasuresView{}})
}

// erasureInputRefused renders the form again, with what was typed and why it was refused,
// when the use case refuses the request as malformed (400) or names an unknown source (422);
// other errors go to the error page.
func (c *console) erasureInputRefused(g *gin.Context, f erasureForm, err error) {
	status, code := httperr.Status(err)
	var msg string
	switch {
	case status == http.StatusUnprocessableEntity:
		msg = "No source with that server URL exists on this instance for the provider; nothing was started."
	case status == http.StatusBadRequest:
		msg = "The request was refused (" + code + "): name a provider, the source's server URL, and at least one identity with a valid id, login or e-mail address."
	default:
		c.fail(g, err)
		return
	}
	c.render(g, status, "erasures", page{Title: "Erasures", Message: msg, Data: erasuresView{Form: f}})
}

// postedErasure is the instance administrator's posted erasure form; false when the answer
// (a refusal, or the form again with its reason) has been written.
func (c *console) postedErasure(g *gin.Context) (ports.Principal, erasureForm, bool) {
	p, ok := c.requireInstanceAdmin(g)
	if !ok {
		return p, erasureForm{}, false
	}
	f, err := erasureFormOf(g)
	if err != nil {
		c.erasureInputRefused(g, f, err)
		return p, f, false
	}
	return p, f, true
}

// previewErasure answers the current match counts of each store for the posted request,
// deleting nothing, and offers to start the erasure (the confirm step).
func (c *console) previewErasure(g *gin.Context) {
	p, f, ok := c.postedErasure(g)
	if !ok {
		return
	}
	matches, err := c.cfg.Erasures.Preview(g.Request.Context(), p, f.request())
	if err != nil {
		c.erasureInputRefused(g, f, err)
		return
	}
	v := erasuresView{Form: f, Previewed: true}
	for _, m := range matches {
		v.Matches = append(v.Matches, storeMatches{Store: m.Store.String(), Matches: m.Matches})
		v.Total += m.Matches
	}
	c.render(g, http.StatusOK, "erasures", page{Title: "Erasure preview", Data: v})
}

// startErasure starts the posted erasure (the preview page's confirm form) and goes to its
// progress page.
func (c *console) startErasure(g *gin.Context) {
	p, f, ok := c.postedErasure(g)
	if !ok {
		return
	}
	r, err := c.cfg.Erasures.Start(g.Request.Context(), p, f.request())
	if err != nil {
		c.erasureInputRefused(g, f, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/admin/erasures/%d?started=1", Path, r.ID()))
}

// erasureView is one erasure's progress: its state, passes asked for and receipts per store
// and pass. The identities are not shown: the page is the request's, not the person's.
type erasureView struct {
	ID          int64
	State       string
	Running     bool
	Provider    string
	Source      string
	Identities  int
	Passes      int
	RequestedBy int64
	CreatedAt   time.Time
	Receipts    []receiptView
	Deleted     int64
}

func (c *console) erasureOf(g *gin.Context) (erasureView, bool) {
	p, ok := c.requireInstanceAdmin(g)
	if !ok {
		return erasureView{}, false
	}
	id, err := idParam(g)
	if err != nil {
		c.fail(g, err)
		return erasureView{}, false
	}
	r, receipts, err := c.cfg.Erasures.Erasure(g.Request.Context(), p, id)
	if err != nil {
		c.fail(g, err)
		return erasureView{}, false
	}
	v := erasureView{ID: r.ID(), State: r.State().String(), Running: r.State() == erasure.Running,
		Provider: r.Scope().Provider().String(), Source: r.Scope().SourceServerURL(), Identities: len(r.Scope().Identities()),
		Passes: r.Passes(), RequestedBy: r.RequestedBy(), CreatedAt: r.CreatedAt()}
	for _, rc := range receipts {
		v.Receipts = append(v.Receipts, receiptView{Store: rc.Store.String(), Pass: rc.Pass, Deleted: rc.Deleted, At: rc.At, FailedRows: rc.FailedRows})
		v.Deleted += rc.Deleted
	}
	return v, true
}

// erasure shows one erasure's progress, reloading itself while it runs.
func (c *console) erasure(g *gin.Context) {
	v, ok := c.erasureOf(g)
	if !ok {
		return
	}
	var notice string
	switch {
	case g.Query("started") == "1":
		notice = fmt.Sprintf("Erasure %d was started.", v.ID)
	case g.Query("resumed") == "1":
		notice = fmt.Sprintf("Erasure %d was resumed: its passes run again.", v.ID)
	}
	p := page{Title: fmt.Sprintf("Erasure %d", v.ID), Notice: notice, Data: v}
	if v.Running {
		p.Refresh = erasureRefreshSeconds
	}
	c.render(g, http.StatusOK, "erasure", p)
}

// confirmResume asks before resuming: a resume repeats every store's pass.
func (c *console) confirmResume(g *gin.Context) {
	v, ok := c.erasureOf(g)
	if !ok {
		return
	}
	c.render(g, http.StatusOK, "erasureresume", page{Title: fmt.Sprintf("Resume erasure %d", v.ID), Data: v})
}

// resumeErasure asks for one more pass over every store (also after DONE or FAILED, as the
// API's resume).
func (c *console) resumeErasure(g *gin.Context) {
	p, ok := c.requireInstanceAdmin(g)
	if !ok {
		return
	}
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	r, err := c.cfg.Erasures.Resume(g.Request.Context(), p, id)
	if err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/admin/erasures/%d?resumed=1", Path, r.ID()))
}

type receiptView struct {
	Store      string
	Pass       int
	Deleted    int64
	At         time.Time
	FailedRows []int64
}
