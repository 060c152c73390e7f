package operatorapi

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/deadletters"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// deadLetterJSON is the contract's dead-letter list item.
type deadLetterJSON struct {
	ID          int64   `json:"id"`
	Provider    string  `json:"provider"`
	EventType   string  `json:"eventType"`
	DeliveryKey string  `json:"deliveryKey"`
	ScopeKey    string  `json:"scopeKey"`
	Subject     string  `json:"subject"`
	ReceivedAt  string  `json:"receivedAt"`
	DeadAt      *string `json:"deadAt"`
	Attempts    int     `json:"attempts"`
	ErrorClass  string  `json:"errorClass"`
}

// deadLetterDetailJSON is one dead letter with its payload (the stored JSON) and headers.
type deadLetterDetailJSON struct {
	deadLetterJSON
	Payload json.RawMessage   `json:"payload"`
	Headers map[string]string `json:"headers"`
}

func toDeadLetterJSON(d inbox.Delivery) deadLetterJSON {
	return deadLetterJSON{
		ID: d.ID(), Provider: d.Provider().String(), EventType: d.EventType(), DeliveryKey: d.DeliveryKey(),
		ScopeKey: d.Scope().String(), Subject: d.Subject().String(), ReceivedAt: timestamp(d.ReceivedAt()),
		DeadAt: optionalTimestamp(d.EndedAt()), Attempts: d.Attempt(), ErrorClass: d.ErrorClass(),
	}
}

func toDeadLetterDetailJSON(d ports.DeadLetter) deadLetterDetailJSON {
	return deadLetterDetailJSON{deadLetterJSON: toDeadLetterJSON(d.Delivery), Payload: d.Payload, Headers: d.Headers}
}

// replayedJSON names who replayed: replayedBy is the account id, or null when the configured
// instance administrator token (no account) replayed; replayedByPrincipal says which.
type replayedJSON struct {
	ID                  int64  `json:"id"`
	State               string `json:"state"`
	ReplayedBy          *int64 `json:"replayedBy"`
	ReplayedByPrincipal string `json:"replayedByPrincipal"`
	ReplayedAt          string `json:"replayedAt"`
}

func toReplayedJSON(r deadletters.Replayed) replayedJSON {
	out := replayedJSON{ID: r.ID, State: r.State.String(), ReplayedByPrincipal: "INSTANCE_ADMIN_TOKEN", ReplayedAt: timestamp(r.ReplayedAt)}
	if !r.ByAdminToken {
		by := r.ReplayedBy
		out.ReplayedBy, out.ReplayedByPrincipal = &by, "ACCOUNT"
	}
	return out
}

func (h handlers) answerPage(c *gin.Context, page ports.PageRequest, items []inbox.Delivery, total int) {
	out := make([]deadLetterJSON, len(items))
	for i, d := range items {
		out[i] = toDeadLetterJSON(d)
	}
	c.JSON(http.StatusOK, managementapi.NewPage(out, page, total))
}

func (h handlers) listDead(c *gin.Context) {
	page, err := managementapi.Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	items, total, err := h.dead.List(c.Request.Context(), managementapi.ManagedOf(c), deadLetterFilter(c), page)
	if err != nil {
		h.badInput(c, err)
		return
	}
	h.answerPage(c, page, items, total)
}

func (h handlers) getDead(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	d, err := h.dead.DeadLetter(c.Request.Context(), managementapi.ManagedOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toDeadLetterDetailJSON(d))
}

func (h handlers) replayDead(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, err := h.dead.Replay(c.Request.Context(), managementapi.ManagedOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toReplayedJSON(r))
}

func (h handlers) listInstallationDead(c *gin.Context) {
	page, err := managementapi.Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	items, total, err := h.dead.ListInstallation(c.Request.Context(), managementapi.PrincipalOf(c), deadLetterFilter(c), page)
	if err != nil {
		h.badInput(c, err)
		return
	}
	h.answerPage(c, page, items, total)
}

func (h handlers) getInstallationDead(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	d, err := h.dead.InstallationDeadLetter(c.Request.Context(), managementapi.PrincipalOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toDeadLetterDetailJSON(d))
}

func (h handlers) replayInstallationDead(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, err := h.dead.ReplayInstallation(c.Request.Context(), managementapi.PrincipalOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toReplayedJSON(r))
}

type scopeBacklogJSON struct {
	ScopeKey string `json:"scopeKey"`
	Queued   int64  `json:"queued"`
}

type inboxJSON struct {
	Counts                 map[string]int64   `json:"counts"`
	OldestQueuedAgeSeconds int64              `json:"oldestQueuedAgeSeconds"`
	BusiestScopes          []scopeBacklogJSON `json:"busiestScopes"`
	// EstimatedCounts names the states whose count is an estimate (DONE beyond the number the
	// overview counts one by one); empty when every count is exact.
	EstimatedCounts []string `json:"estimatedCounts"`
}

func (h handlers) inbox(c *gin.Context) {
	o, err := h.dead.Inbox(c.Request.Context(), managementapi.ManagedOf(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := inboxJSON{Counts: make(map[string]int64, 4), BusiestScopes: make([]scopeBacklogJSON, 0, len(o.BusiestScopes)),
		EstimatedCounts: make([]string, 0, len(o.Estimated))}
	for _, s := range o.Estimated {
		out.EstimatedCounts = append(out.EstimatedCounts, s.String())
	}
	for _, s := range inbox.States() {
		out.Counts[s.String()] = o.Counts[s]
	}
	out.OldestQueuedAgeSeconds = int64(o.OldestQueuedAge.Seconds())
	for _, b := range o.BusiestScopes {
		out.BusiestScopes = append(out.BusiestScopes, scopeBacklogJSON{ScopeKey: b.ScopeKey, Queued: b.Queued})
	}
	c.JSON(http.StatusOK, out)
}

// deadLetterFilter reads ?provider=&eventType=&errorClass= (each optional, exact match).
func deadLetterFilter(c *gin.Context) ports.DeadLetterFilter {
	return ports.DeadLetterFilter{Provider: c.Query("provider"), EventType: c.Query("eventType"), ErrorClass: c.Query("errorClass")}
}
