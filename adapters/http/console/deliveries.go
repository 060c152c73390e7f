package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The deliveries browser and the rejection log (CONTRACT.md "Operator API"): the same use cases,
// filters, paging and authorisation as GET /api/workspaces/{ws}/integration/deliveries and
// …/rejections. Reading manages nothing, so a workspace's pages are open to its members
// whatever their role; the replay button shows only to who may replay (the dead-letter rule:
// the workspace's ADMIN, the instance administrator for installation rows).

// localTime is how a datetime-local input writes a time (no zone; the console means UTC).
const (
	localTime        = "2006-01-02T15:04"
	localTimeSeconds = "2006-01-02T15:04:05"
)

// receivedFields are the filter's times.
var receivedFields = []string{"receivedAfter", "receivedBefore"}

// deliveryForm is the filter form as the query gave it: its values, the times rewritten for
// the datetime-local inputs (UTC, no zone).
type deliveryForm struct {
	State, Provider, EventType, ErrorClass, Subject, ScopeKey, DeliveryKey string
	ReceivedAfter, ReceivedBefore                                          string
}

// parseDeliveryQuery reads the browser's filter and page from the query exactly as the API
// does (operatorapi.ParseDeliveryFilter, managementapi.Paging), after writing a received-at
// time a datetime-local input sent (2026-12-03T10:02, meant as UTC) as RFC 3339. Errors: the
// API's *ports.RejectedError naming the field.
func parseDeliveryQuery(g *gin.Context) (ports.DeliveryFilter, ports.PageRequest, error) {
	query := g.Request.URL.Query()
	for _, name := range receivedFields {
		values := query[name]
		if len(values) != 1 {
			continue
		}
		for _, layout := range []string{localTime, localTimeSeconds} {
			if at, err := time.ParseInLocation(layout, values[0], time.UTC); err == nil {
				query.Set(name, at.Format(time.RFC3339))
				break
			}
		}
	}
	filter, err := operatorapi.ParseDeliveryFilter(query)
	if err != nil {
		return filter, ports.PageRequest{}, err
	}
	page, err := managementapi.Paging(g)
	return filter, page, err
}

func formOf(g *gin.Context) deliveryForm {
	f := deliveryForm{State: g.Query("state"), Provider: g.Query("provider"), EventType: g.Query("eventType"),
		ErrorClass: g.Query("errorClass"), Subject: g.Query("subject"), ScopeKey: g.Query("scopeKey"),
		DeliveryKey: g.Query("deliveryKey"), ReceivedAfter: g.Query("receivedAfter"), ReceivedBefore: g.Query("receivedBefore")}
	for _, t := range []*string{&f.ReceivedAfter, &f.ReceivedBefore} {
		if at, err := time.Parse(time.RFC3339Nano, *t); err == nil {
			*t = at.UTC().Format(localTimeSeconds)
		}
	}
	return f
}

// invalidInput is the sentence for a query the browser refuses: the field it names, never the
// value (it is the caller's own text, shown back in the form).
func invalidInput(err error) (string, bool) {
	var rej *ports.RejectedError
	if !errors.As(err, &rej) || !errors.Is(err, ports.ErrMalformed) {
		return "", false
	}
	switch rej.Detail {
	case "state":
		return "The state must be one of QUEUED, LEASED, DONE or DEAD.", true
	case "provider":
		return "The provider must be one this server runs, in capitals, as the list offers them.", true
	case "errorClass":
		return "The error class must be one a dead letter records, such as PERMANENT:*json.SyntaxError or LeaseExpired.", true
	case "receivedAfter", "receivedBefore":
		return fmt.Sprintf("The time %q must be a date and time such as 2026-12-03T10:02 (UTC) or RFC 3339.", rej.Detail), true
	case "page":
		// Past the last page, or past what the browser reaches (ports.DeliveryListCap matches).
		return fmt.Sprintf("The page number is not valid: the browser pages through the first %d matches; narrow the filter or the received-at range to go further.", ports.DeliveryListCap), true
	case "size":
		return fmt.Sprintf("The page size must be between 1 and %d.", managementapi.MaxPageSize), true
	default:
		return fmt.Sprintf("The filter field %q is not valid (unknown, repeated, too long or not text).", rej.Detail), true
	}
}

// deliveryList is the browser page: the filter as given, one page of rows and the pager.
type deliveryList struct {
	Base   string // the page's path, for the form, the rows' links and the pager
	Form   deliveryForm
	States []string
	Items  []ports.DeliveryItem
	Total  int
	Capped bool
	Prev   string // the pager's links ("" none)
	Next   string
}

// pagerLinks are the links to the pages before and after req in a list of total rows ("" none).
func pagerLinks(query url.Values, req ports.PageRequest, total int) (prev, next string) {
	if req.Page > 0 {
		prev = pageLink(query, req.Page-1)
	}
	if (req.Page+1)*req.Size < total {
		next = pageLink(query, req.Page+1)
	}
	return prev, next
}

// pageLink is the query of the same list at page n.
func pageLink(query url.Values, n int) string {
	q := url.Values{}
	for name, values := range query {
		if name != "page" && len(values) == 1 && values[0] != "" {
			q.Set(name, values[0])
		}
	}
	if n > 0 {
		q.Set("page", strconv.Itoa(n))
	}
	if len(q) == 0 {
		return "?"
	}
	return "?" + q.Encode()
}

func (c *console) renderDeliveries(g *gin.Context, title, slug, base string,
	read func(ports.DeliveryFilter, ports.PageRequest) ([]ports.DeliveryItem, int, bool, error)) {
	l := deliveryList{Base: base, Form: formOf(g)}
	for _, s := range inbox.States() {
		l.States = append(l.States, s.String())
	}
	filter, req, err := parseDeliveryQuery(g)
	if err == nil {
		l.Items, l.Total, l.Capped, err = read(filter, req)
	}
	if err != nil {
		if message, ok := invalidInput(err); ok {
			c.render(g, http.StatusBadRequest, "deliveries", page{Title: title, Workspace: slug, Message: message, Data: l})
			return
		}
		c.fail(g, err)
		return
	}
	l.Prev, l.Next = pagerLinks(g.Request.URL.Query(), req, l.Total)
	c.render(g, http.StatusOK, "deliveries", page{Title: title, Workspace: slug, Data: l})
}

// memberWorkspace is the workspace of the path as the session's principal may read it: a member
// whatever the role, or the instance administrator (the API's RequireMember: 404 unknown, 403
// not a member).
func (c *console) memberWorkspace(g *gin.Context) (ports.Workspace, bool) {
	ws, err := managementapi.MemberWorkspace(g.Request.Context(), c.cfg.Members, sessionOf(g).principal, g.Param("ws"))
	if err != nil {
		c.fail(g, err)
		return ports.Workspace{}, false
	}
	return ws, true
}

func (c *console) deliveries(g *gin.Context) {
	ws, ok := c.memberWorkspace(g)
	if !ok {
		return
	}
	ctx := g.Request.Context()
	c.renderDeliveries(g, "Deliveries · "+ws.Slug, ws.Slug, Path+"/workspaces/"+ws.Slug+"/deliveries",
		func(f ports.DeliveryFilter, p ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
			return c.cfg.Deliveries.List(ctx, ws, f, p)
		})
}

// installationOnly refuses anyone but the instance administrator with 403 before the page
// reads its query (the use cases check it again).
func (c *console) installationOnly(g *gin.Context) (ports.Principal, bool) {
	p := sessionOf(g).principal
	if !p.InstanceAdmin {
		c.fail(g, ports.ErrForbidden)
		return p, false
	}
	return p, true
}

func (c *console) installationDeliveries(g *gin.Context) {
	p, ok := c.installationOnly(g)
	if !ok {
		return
	}
	ctx := g.Request.Context()
	c.renderDeliveries(g, "Installation deliveries", "", Path+"/admin/deliveries",
		func(f ports.DeliveryFilter, req ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
			return c.cfg.Deliveries.ListInstallation(ctx, p, f, req)
		})
}

// deliveryView is one row with its attempts and steps, payload and headers pretty-printed.
type deliveryView struct {
	Base     string // the list's path
	Item     ports.DeliveryItem
	Payload  string
	Headers  []header
	Steps    []ports.DeliveryStep
	Attempts []attemptView
	// Replay is the replay confirmation's path: set for a DEAD row the caller may replay.
	Replay string
	// TraceID is the W3C trace id of the row's delivery ("" when its server traced nothing);
	// TraceLink is Config.TraceURL with it filled in ("" without a template).
	TraceID, TraceLink string
}

// attemptView is one attempt: its cause with the failure table's sentence, never an error
// message.
type attemptView struct {
	ports.DeliveryAttempt
	Duration string // "" when the start was not recorded
}

func (c *console) newDeliveryView(base string, d ports.Delivery) deliveryView {
	dl := newDeadLetterView(base, ports.DeadLetter{Delivery: d.Delivery, Payload: d.Payload, Headers: d.Headers})
	v := deliveryView{Base: base, Item: d.DeliveryItem, Payload: dl.Payload, Headers: dl.Headers, Steps: d.Steps,
		TraceID: d.TraceID}
	if d.TraceID != "" && c.cfg.TraceURL != "" {
		// The id is 32 hex digits (the reader keeps nothing else), so it needs no escaping.
		v.TraceLink = strings.ReplaceAll(c.cfg.TraceURL, TraceURLPlaceholder, d.TraceID)
	}
	for _, a := range d.Attempts {
		av := attemptView{DeliveryAttempt: a}
		if !a.StartedAt.IsZero() {
			av.Duration = max(a.EndedAt.Sub(a.StartedAt), 0).Round(time.Millisecond).String()
		}
		v.Attempts = append(v.Attempts, av)
	}
	return v
}

func (c *console) delivery(g *gin.Context) {
	ws, ok := c.memberWorkspace(g)
	if !ok {
		return
	}
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	ctx := g.Request.Context()
	d, err := c.cfg.Deliveries.Delivery(ctx, ws, id)
	if err != nil {
		c.fail(g, err)
		return
	}
	v := c.newDeliveryView(Path+"/workspaces/"+ws.Slug+"/deliveries", d)
	if d.Delivery.State() == inbox.Dead {
		// Replaying manages the workspace: the dead-letter replay's own check (ADMIN).
		if _, err := c.cfg.Management.Manage(ctx, sessionOf(g).principal, ws.Slug); err == nil {
			v.Replay = fmt.Sprintf("%s/workspaces/%s/dead-letters/%d/replay", Path, ws.Slug, id)
		}
	}
	c.render(g, http.StatusOK, "delivery", page{Title: fmt.Sprintf("Delivery %d · %s", id, ws.Slug), Workspace: ws.Slug, Data: v})
}

func (c *console) installationDelivery(g *gin.Context) {
	p, ok := c.installationOnly(g)
	if !ok {
		return
	}
	id, ok := c.pathID(g)
	if !ok {
		return
	}
	d, err := c.cfg.Deliveries.InstallationDelivery(g.Request.Context(), p, id)
	if err != nil {
		c.fail(g, err)
		return
	}
	v := c.newDeliveryView(Path+"/admin/deliveries", d)
	if d.Delivery.State() == inbox.Dead {
		// InstallationDelivery answered: the caller is the instance administrator, who replays.
		v.Replay = fmt.Sprintf("%s/admin/dead-letters/%d/replay", Path, id)
	}
	c.render(g, http.StatusOK, "delivery", page{Title: fmt.Sprintf("Installation delivery %d", id), Data: v})
}

// rejectionList is the rejection log page.
type rejectionList struct {
	All   bool // the instance administrator's log of every refusal
	Items []ports.RejectionCount
	Total int
	Prev  string
	Next  string
}

func (c *console) renderRejections(g *gin.Context, title, slug string, all bool,
	read func(ports.PageRequest) ([]ports.RejectionCount, int, error)) {
	req, err := managementapi.Paging(g)
	if err != nil {
		message := fmt.Sprintf("The page number or size is not valid (a size is 1 to %d).", managementapi.MaxPageSize)
		c.render(g, http.StatusBadRequest, "rejections", page{Title: title, Workspace: slug, Message: message, Data: rejectionList{All: all}})
		return
	}
	l := rejectionList{All: all}
	l.Items, l.Total, err = read(req)
	if err != nil {
		c.fail(g, err)
		return
	}
	l.Prev, l.Next = pagerLinks(g.Request.URL.Query(), req, l.Total)
	c.render(g, http.StatusOK, "rejections", page{Title: title, Workspace: slug, Data: l})
}

func (c *console) rejections(g *gin.Context) {
	ws, ok := c.memberWorkspace(g)
	if !ok {
		return
	}
	ctx := g.Request.Context()
	c.renderRejections(g, "Rejected webhooks · "+ws.Slug, ws.Slug, false, func(p ports.PageRequest) ([]ports.RejectionCount, int, error) {
		return c.cfg.Rejections.List(ctx, ws, p)
	})
}

func (c *console) installationRejections(g *gin.Context) {
	p, ok := c.installationOnly(g)
	if !ok {
		return
	}
	ctx := g.Request.Context()
	c.renderRejections(g, "Rejected webhooks (all)", "", true, func(req ports.PageRequest) ([]ports.RejectionCount, int, error) {
		return c.cfg.Rejections.ListAll(ctx, p, req)
	})
}
