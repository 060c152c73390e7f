package operatorapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RegisterDeliveries adds the deliveries browser (CONTRACT.md "Operator API") to r: a
// workspace's rows for its members whatever their role (reading manages nothing; 404 unknown
// workspace, 403 a non-member, 404 a row of another workspace), the installation rows for the
// instance administrator under /api/admin (403 for anyone else). Each read counts against the
// caller's reads in flight (reads: 429 retry past them).
func RegisterDeliveries(r gin.IRouter, auth managementapi.Authenticator, members managementapi.Members, svc *deliveries.Service, reads *ReadLimit, log ports.Logger) {
	h := deliveryHandlers{svc: svc, handlers: handlers{log: log}}
	ws := managementapi.MemberRoutes(r, auth, members, "/integration")
	ws.GET("/deliveries", reads.Handler(), h.list)
	ws.GET("/deliveries/:id", reads.Handler(), h.get)

	admin := r.Group("/api/admin", managementapi.RequireAuth(auth), managementapi.RequireInstanceAdmin())
	admin.GET("/integration/deliveries", reads.Handler(), h.listInstallation)
	admin.GET("/integration/deliveries/:id", reads.Handler(), h.getInstallation)
}

type deliveryHandlers struct {
	handlers
	svc *deliveries.Service
}

// deliveryJSON is the contract's deliveries list item: the dead-letter item (deadAt is null
// unless the row is DEAD) with the row's state and when its latest attempt began (null when it
// was never claimed).
type deliveryJSON struct {
	deadLetterJSON
	State         string  `json:"state"`
	LastAttemptAt *string `json:"lastAttemptAt"`
}

type stepJSON struct {
	Name        string `json:"name"`
	CommittedAt string `json:"committedAt"`
}

// attemptJSON is one attempt. errorClass is the failure table's cause ("provider-refused",
// "lease-expired"; null for done and released) and errorText that table's sentence for it,
// never an error message. startedAt and durationMs are null for a lease taken before attempts
// were recorded.
type attemptJSON struct {
	Attempt    int     `json:"attempt"`
	StartedAt  *string `json:"startedAt"`
	EndedAt    string  `json:"endedAt"`
	Server     *string `json:"server"`
	Outcome    string  `json:"outcome"`
	ErrorClass *string `json:"errorClass"`
	ErrorText  *string `json:"errorText"`
	DurationMs *int64  `json:"durationMs"`
}

// deliveryDetailJSON is one row: the item with payload, headers, who replayed it and when
// (replayedBy is the account id, null when never replayed or replayed with the configured
// administrator token; replayedAt null when never replayed), its steps and its attempts.
type deliveryDetailJSON struct {
	deliveryJSON
	TraceID    *string           `json:"traceId"`
	Payload    json.RawMessage   `json:"payload"`
	Headers    map[string]string `json:"headers"`
	ReplayedBy *int64            `json:"replayedBy"`
	ReplayedAt *string           `json:"replayedAt"`
	Steps      []stepJSON        `json:"steps"`
	Attempts   []attemptJSON     `json:"attempts"`
}

// deliveryPageJSON is the contract's page; totalCapped says total stopped counting at
// ports.DeliveryListCap (more rows match; narrow the filter or the received-at range).
type deliveryPageJSON struct {
	managementapi.Page[deliveryJSON]
	TotalCapped bool `json:"totalCapped"`
}

func toDeliveryJSON(it ports.DeliveryItem) deliveryJSON {
	d := it.Delivery
	out := deliveryJSON{deadLetterJSON: toDeadLetterJSON(d), State: d.State().String(), LastAttemptAt: optionalTimestamp(it.LastAttemptAt)}
	if d.State() != inbox.Dead {
		out.DeadAt = nil
	}
	return out
}

func toDeliveryDetailJSON(d ports.Delivery) deliveryDetailJSON {
	out := deliveryDetailJSON{deliveryJSON: toDeliveryJSON(d.DeliveryItem), Payload: d.Payload, Headers: d.Headers,
		ReplayedAt: optionalTimestamp(d.Delivery.ReplayedAt()), Steps: make([]stepJSON, 0, len(d.Steps)),
		Attempts: make([]attemptJSON, 0, len(d.Attempts))}
	if by := d.Delivery.ReplayedBy(); by > 0 {
		out.ReplayedBy = &by
	}
	if d.TraceID != "" {
		id := d.TraceID
		out.TraceID = &id
	}
	for _, s := range d.Steps {
		out.Steps = append(out.Steps, stepJSON{Name: s.Name, CommittedAt: timestamp(s.CommittedAt)})
	}
	for _, a := range d.Attempts {
		j := attemptJSON{Attempt: a.Attempt, StartedAt: optionalTimestamp(a.StartedAt), EndedAt: timestamp(a.EndedAt), Outcome: a.Outcome}
		if a.Server != "" {
			server := a.Server
			j.Server = &server
		}
		if !a.Cause.IsZero() {
			class, text := a.Cause.String(), a.Cause.Sentence()
			j.ErrorClass, j.ErrorText = &class, &text
		}
		if !a.StartedAt.IsZero() {
			ms := max(a.EndedAt.Sub(a.StartedAt), 0).Milliseconds()
			j.DurationMs = &ms
		}
		out.Attempts = append(out.Attempts, j)
	}
	return out
}

// badInput answers 400 naming the query field: {"error":"<reason>","field":"<name>"}. Other
// errors go through the one error map.
func (h handlers) badInput(c *gin.Context, err error) {
	var rej *ports.RejectedError
	if errors.As(err, &rej) && errors.Is(err, ports.ErrMalformed) && rej.Detail != "" {
		c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": rej.Reason, "field": rej.Detail})
		return
	}
	h.fail(c, err)
}

// maxFilterValue bounds a text filter value (bytes); longer values match nothing anyway.
const maxFilterValue = 512

// deliveryQueryFields are the query parameters the browser reads; any other is refused.
var deliveryQueryFields = map[string]bool{
	"page": true, "size": true, "state": true, "provider": true, "eventType": true, "errorClass": true,
	"subject": true, "scopeKey": true, "deliveryKey": true, "receivedAfter": true, "receivedBefore": true,
}

// deliveryFilter reads the browser's filter from the request's query (ParseDeliveryFilter).
func deliveryFilter(c *gin.Context) (ports.DeliveryFilter, error) {
	return ParseDeliveryFilter(c.Request.URL.Query())
}

// ParseDeliveryFilter reads the deliveries browser's filter from a query (the API's and the
// console's). An empty value is no filter. Errors (*ports.RejectedError wrapping
// ports.ErrMalformed, reason "invalid-filter", Detail the field): an unknown parameter, a
// parameter given twice, a state that is none of QUEUED, LEASED, DONE, DEAD, a provider that is
// no provider name, a time that is not RFC 3339, a text value that is not UTF-8 or longer than
// maxFilterValue.
func ParseDeliveryFilter(query url.Values) (ports.DeliveryFilter, error) {
	var f ports.DeliveryFilter
	for name, values := range query {
		if !deliveryQueryFields[name] || len(values) != 1 {
			return f, ports.Reject(ports.ErrMalformed, "invalid-filter", name)
		}
		if v := values[0]; len(v) > maxFilterValue || !utf8.ValidString(v) {
			return f, ports.Reject(ports.ErrMalformed, "invalid-filter", name)
		}
	}
	bad := func(name string) error { return ports.Reject(ports.ErrMalformed, "invalid-filter", name) }
	if v := query.Get("state"); v != "" {
		s, err := inbox.ParseState(v)
		if err != nil {
			return f, bad("state")
		}
		f.State = s
	}
	if v := query.Get("provider"); v != "" {
		if _, err := provider.New(v); err != nil {
			return f, bad("provider")
		}
		f.Provider = v
	}
	f.EventType, f.ErrorClass = query.Get("eventType"), query.Get("errorClass")
	f.Subject, f.ScopeKey, f.DeliveryKey = query.Get("subject"), query.Get("scopeKey"), query.Get("deliveryKey")
	for _, t := range []struct {
		name string
		into *time.Time
	}{{"receivedAfter", &f.ReceivedAfter}, {"receivedBefore", &f.ReceivedBefore}} {
		if v := query.Get(t.name); v != "" {
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, bad(t.name)
			}
			*t.into = at
		}
	}
	return f, nil
}

func (h deliveryHandlers) listWith(c *gin.Context, read func(ports.DeliveryFilter, ports.PageRequest) ([]ports.DeliveryItem, int, bool, error)) {
	filter, err := deliveryFilter(c)
	if err != nil {
		h.badInput(c, err)
		return
	}
	page, err := managementapi.Paging(c)
	if err != nil {
		h.badInput(c, err)
		return
	}
	items, total, capped, err := read(filter, page)
	if err != nil {
		h.badInput(c, err)
		return
	}
	out := make([]deliveryJSON, len(items))
	for i, it := range items {
		out[i] = toDeliveryJSON(it)
	}
	c.JSON(http.StatusOK, deliveryPageJSON{Page: managementapi.NewPage(out, page, total), TotalCapped: capped})
}

func (h deliveryHandlers) list(c *gin.Context) {
	ws := managementapi.MemberWorkspaceOf(c)
	h.listWith(c, func(f ports.DeliveryFilter, p ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
		return h.svc.List(c.Request.Context(), ws, f, p)
	})
}

func (h deliveryHandlers) listInstallation(c *gin.Context) {
	principal := managementapi.PrincipalOf(c)
	h.listWith(c, func(f ports.DeliveryFilter, p ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
		return h.svc.ListInstallation(c.Request.Context(), principal, f, p)
	})
}

func (h deliveryHandlers) get(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	d, err := h.svc.Delivery(c.Request.Context(), managementapi.MemberWorkspaceOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toDeliveryDetailJSON(d))
}

func (h deliveryHandlers) getInstallation(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	d, err := h.svc.InstallationDelivery(c.Request.Context(), managementapi.PrincipalOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toDeliveryDetailJSON(d))
}
