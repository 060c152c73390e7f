package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The bulk replay page (/console/workspaces/{ws}/replays) is a second face of the replay API
// (CONTRACT.md "Operator API", application/replays) with its rules: every member of the
// workspace and the instance administrator see the jobs and ask for a dry-run count (a GET
// form, which changes nothing); the workspace's ADMIN and the instance administrator start and
// cancel jobs (POST forms with the session's CSRF token, bounded like every console form).

// replaysPage is the page's template name (templates/replays.html).
const replaysPage = "replays"

// replayRefreshSeconds is how often the page reloads itself while a job runs.
const replayRefreshSeconds = 5

// replayJobsShown is how many jobs the page lists, newest first.
const replayJobsShown = 20

// consoleTime is the form's time format: an <input type="datetime-local">, read as UTC.
const consoleTime = "2006-01-02T15:04"

// replayForm is the filter as the form holds it (the inputs' values, shown back as typed).
type replayForm struct {
	Provider, EventType, ErrorClass string
	DeadAfter, DeadBefore           string
	ReceivedAfter, ReceivedBefore   string
}

// replayFormFields are the filter's form fields; anything else in a replay form is refused.
var replayFormFields = []string{"provider", "eventType", "errorClass", "deadAfter", "deadBefore", "receivedAfter", "receivedBefore"}

func (f replayForm) values() []string {
	return []string{f.Provider, f.EventType, f.ErrorClass, f.DeadAfter, f.DeadBefore, f.ReceivedAfter, f.ReceivedBefore}
}

// Query is the form as a query string (the dry-run link after a start).
func (f replayForm) Query() template.URL {
	v := url.Values{}
	for i, name := range replayFormFields {
		if val := f.values()[i]; val != "" {
			v.Set(name, val)
		}
	}
	return template.URL(v.Encode())
}

// readReplayForm reads the filter from get (query or posted form) and validates it as the API
// does (svc.Filter). It returns the field name of a refused value.
func readReplayForm(svc Replays, get func(string) string) (replayForm, replayjob.Filter, string) {
	f := replayForm{Provider: get("provider"), EventType: get("eventType"), ErrorClass: get("errorClass"),
		DeadAfter: get("deadAfter"), DeadBefore: get("deadBefore"), ReceivedAfter: get("receivedAfter"), ReceivedBefore: get("receivedBefore")}
	fields := replayjob.FilterFields{Provider: f.Provider, EventType: f.EventType, ErrorClass: f.ErrorClass}
	for _, t := range []struct {
		name, v string
		into    *time.Time
	}{{"deadAfter", f.DeadAfter, &fields.DeadAfter}, {"deadBefore", f.DeadBefore, &fields.DeadBefore},
		{"receivedAfter", f.ReceivedAfter, &fields.ReceivedAfter}, {"receivedBefore", f.ReceivedBefore, &fields.ReceivedBefore}} {
		if t.v == "" {
			continue
		}
		at, err := parseConsoleTime(t.v)
		if err != nil {
			return f, replayjob.Filter{}, t.name
		}
		*t.into = at
	}
	filter, err := svc.Filter(fields)
	var fe *replayjob.FieldError
	if errors.As(err, &fe) {
		return f, replayjob.Filter{}, fe.Field
	}
	if err != nil {
		return f, replayjob.Filter{}, "filter"
	}
	return f, filter, ""
}

// parseConsoleTime reads a datetime-local value (with or without seconds) or RFC 3339, as UTC.
func parseConsoleTime(v string) (time.Time, error) {
	for _, layout := range []string{consoleTime, consoleTime + ":05", time.RFC3339} {
		if at, err := time.Parse(layout, v); err == nil {
			return at.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", v)
}

// replayJobView is one job as the page shows it.
type replayJobView struct {
	ID                         int64
	State                      string
	Running                    bool
	Filter                     []string // "name = value" of each set filter field
	Matched, Replayed, Skipped int64
	// Percent is the share of matched rows looked at (replayed or skipped).
	Percent     int64
	RequestedBy string
	StartedAt   time.Time
	FinishedAt  time.Time
}

func newReplayJobView(j ports.ReplayJob) replayJobView {
	v := replayJobView{ID: j.ID, State: j.State.String(), Running: j.State == replayjob.Running,
		Matched: j.Progress.Matched, Replayed: j.Progress.Replayed, Skipped: j.Progress.Skipped,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, Percent: 100, RequestedBy: "the instance administrator token"}
	if j.Progress.Matched > 0 {
		v.Percent = (j.Progress.Replayed + j.Progress.Skipped) * 100 / j.Progress.Matched
	}
	if j.RequestedBy != ports.InstanceAdminAccountID {
		v.RequestedBy = "account " + strconv.FormatInt(j.RequestedBy, 10)
	}
	f := j.Filter.Fields()
	for _, kv := range []struct{ name, value string }{{"provider", f.Provider}, {"event type", f.EventType}, {"error class", f.ErrorClass}} {
		if kv.value != "" {
			v.Filter = append(v.Filter, kv.name+" = "+kv.value)
		}
	}
	for _, kv := range []struct {
		name string
		at   time.Time
	}{{"dead after", f.DeadAfter}, {"dead before", f.DeadBefore}, {"received after", f.ReceivedAfter}, {"received before", f.ReceivedBefore}} {
		if !kv.at.IsZero() {
			v.Filter = append(v.Filter, kv.name+" "+kv.at.UTC().Format("2006-01-02 15:04:05Z"))
		}
	}
	return v
}

// replaysData is the page's data.
type replaysData struct {
	Form replayForm
	// Counted: the form asked for a dry run; Matched is its answer.
	Counted bool
	Matched int64
	// CanStart: the principal may start and cancel jobs (ADMIN or instance administrator).
	CanStart bool
	Jobs     []replayJobView
	Total    int
}

// replays answers the page: the filter form (with its dry-run count when ?count= is set), the
// start button for who may manage the workspace, and the newest jobs with their progress.
func (c *console) replays(g *gin.Context) {
	ctx := g.Request.Context()
	p := sessionOf(g).principal
	ws, err := managementapi.MemberWorkspace(ctx, c.cfg.Members, p, g.Param("ws"))
	if err != nil {
		c.fail(g, err)
		return
	}
	query := g.Request.URL.Query()
	for name := range query {
		if name != "count" && !isReplayFormField(name) {
			c.badReplayForm(g, ws.Slug, name)
			return
		}
	}
	form, filter, bad := readReplayForm(c.cfg.Replays, query.Get)
	if bad != "" {
		c.badReplayForm(g, ws.Slug, bad)
		return
	}
	data := replaysData{Form: form}
	if query.Get("count") != "" {
		if data.Matched, err = c.cfg.Replays.Count(ctx, ws, filter); err != nil {
			c.fail(g, err)
			return
		}
		data.Counted = true
	}
	_, err = c.cfg.Management.Manage(ctx, p, ws.Slug)
	switch {
	case err == nil:
		data.CanStart = true
	case !errors.Is(err, ports.ErrForbidden):
		c.fail(g, err)
		return
	}
	jobs, total, err := c.cfg.Replays.List(ctx, ws, ports.PageRequest{Page: 0, Size: replayJobsShown})
	if err != nil {
		c.fail(g, err)
		return
	}
	data.Total = total
	refresh := 0
	for _, j := range jobs {
		v := newReplayJobView(j)
		if v.Running {
			refresh = replayRefreshSeconds
		}
		data.Jobs = append(data.Jobs, v)
	}
	notice := ""
	if id := query.Get("started"); id != "" {
		notice = "Replay job " + id + " started."
	}
	c.render(g, http.StatusOK, replaysPage, page{Title: "Bulk replay", Workspace: ws.Slug, Refresh: refresh, Notice: notice, Data: data})
}

func isReplayFormField(name string) bool {
	for _, f := range replayFormFields {
		if f == name {
			return true
		}
	}
	return name == "started"
}

// replayFieldHints say what a refused filter field takes (badReplayForm builds the provider's
// from the providers this server runs).
var replayFieldHints = map[string]string{
	"errorClass": "It takes an error class as a dead letter shows it, such as PERMANENT:*json.SyntaxError, or LeaseExpired.",
	"eventType":  "It takes an event type of at most 512 bytes, such as issues.",
}

// badReplayForm answers 400 naming the refused field, as the API's invalid-filter does, with
// what the field takes.
func (c *console) badReplayForm(g *gin.Context, ws, field string) {
	hint, ok := replayFieldHints[field]
	switch {
	case ok:
	case field == "provider":
		names := make([]string, 0, len(c.cfg.Replays.Providers()))
		for _, p := range c.cfg.Replays.Providers() {
			names = append(names, p.String())
		}
		hint = "It takes the name of a provider this server runs: " + strings.Join(names, ", ") + "."
	case isReplayFormField(field):
		hint = "It takes a date and time (UTC)."
	default:
		hint = "The form has no such field."
	}
	c.render(g, http.StatusBadRequest, "error", page{Title: "Bad filter", Workspace: ws,
		Message: "The filter field " + field + " has a value the console cannot use. " + hint + " Check it and try again."})
	g.Abort()
}

// replayRefused answers a start the workspace's limits refused with 409 and what to do about
// it; other errors go through the console's error page.
func (c *console) replayRefused(g *gin.Context, ws string, err error) {
	var le *replayjob.LimitError
	if !errors.As(err, &le) {
		c.fail(g, err)
		return
	}
	msg := fmt.Sprintf("This workspace already runs as many replay jobs as it may at once (%d). Wait for one to end, or cancel one, and start again.", le.Max)
	if le.Limit == replayjob.LimitRows {
		msg = fmt.Sprintf("The filter matches more than %d DEAD rows, the most one replay job may replay. Narrow it (a provider, an event type, an error class or a shorter time range) and start again.", le.Max)
	}
	status, _ := httperr.Status(err)
	c.render(g, status, "error", page{Title: "Replay not started", Workspace: ws, Message: msg})
	g.Abort()
}

// startReplay starts a job for the posted filter (ADMIN or instance administrator, as POST
// …/integration/replays) and goes back to the page.
func (c *console) startReplay(g *gin.Context) {
	m, ok := c.manage(g)
	if !ok {
		return
	}
	for name := range g.Request.PostForm {
		if name != "csrf" && !isReplayFormField(name) {
			c.badReplayForm(g, m.Workspace().Slug, name)
			return
		}
	}
	_, filter, bad := readReplayForm(c.cfg.Replays, g.PostForm)
	if bad != "" {
		c.badReplayForm(g, m.Workspace().Slug, bad)
		return
	}
	j, err := c.cfg.Replays.Start(g.Request.Context(), m, filter)
	if err != nil {
		c.replayRefused(g, m.Workspace().Slug, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/replays?started=%d", Path, m.Workspace().Slug, j.ID))
}

// cancelReplay cancels a RUNNING job (ADMIN or instance administrator, as POST …/cancel) and
// goes back to the page; a job of another workspace is not found (404), an ended one is 409.
func (c *console) cancelReplay(g *gin.Context) {
	m, id, ok := c.manageRow(g)
	if !ok {
		return
	}
	if _, err := c.cfg.Replays.Cancel(g.Request.Context(), m, id); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/workspaces/%s/replays", Path, m.Workspace().Slug))
}

// registerReplays parses the page and mounts its routes on the signed-in group s (nothing
// without Config.Replays).
func (c *console) registerReplays(s gin.IRouter) error {
	if c.cfg.Replays == nil {
		return nil
	}
	if c.cfg.Members == nil {
		return errors.New("console: the bulk replay page needs the members directory")
	}
	t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/progress.html", "templates/replays.html")
	if err != nil {
		return fmt.Errorf("console: template replays: %w", err)
	}
	c.pages[replaysPage] = t
	// Who: every member of the workspace and the instance administrator (as GET …/replays).
	s.GET("/workspaces/:ws/replays", c.replays)
	// Who: the workspace's ADMIN and the instance administrator (as POST …/replays, …/cancel).
	s.POST("/workspaces/:ws/replays", c.startReplay)
	s.POST("/workspaces/:ws/replays/:id/cancel", c.cancelReplay)
	return nil
}

// Replays is the bulk replay use case the replay API calls too.
type Replays = *replays.Service
