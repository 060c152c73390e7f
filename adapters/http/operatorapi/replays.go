package operatorapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/replays"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RegisterReplays adds bulk replay (CONTRACT.md "Operator API") to r. Members of the workspace
// (and the instance administrator) read its jobs and ask for a dry-run count, which change
// nothing; starting and cancelling a job manage the workspace: its ADMIN or the instance
// administrator (403 for a member). 404 for an unknown workspace or a job of another
// workspace, 403 for a non-member, 401 without a valid token. A start past the workspace's
// limits (replays.ServiceConfig) is 409 replay-limit; a filter value outside its field's set
// is 400 invalid-filter naming the field.
func RegisterReplays(r gin.IRouter, auth Auth, members managementapi.Members, svc *replays.Service, log ports.Logger) {
	h := replayHandlers{svc: svc, auth: auth, handlers: handlers{log: log}}
	ws := managementapi.MemberRoutes(r, auth, members, "/integration")
	ws.POST("/replays", h.start)
	ws.GET("/replays", h.list)
	ws.GET("/replays/:id", h.get)
	ws.POST("/replays/:id/cancel", h.cancel)
}

type replayHandlers struct {
	handlers
	svc  *replays.Service
	auth Auth
}

// replayFilterJSON is a job's filter as the contract names it; absent fields are null.
type replayFilterJSON struct {
	Provider       *string `json:"provider"`
	EventType      *string `json:"eventType"`
	ErrorClass     *string `json:"errorClass"`
	DeadAfter      *string `json:"deadAfter"`
	DeadBefore     *string `json:"deadBefore"`
	ReceivedAfter  *string `json:"receivedAfter"`
	ReceivedBefore *string `json:"receivedBefore"`
}

// replayJobJSON is one job. requestedBy is the requesting account's id, null when the
// configured instance administrator token (no account) started it; requestedByPrincipal says
// which, as the single replay's replayedByPrincipal does.
type replayJobJSON struct {
	ID                   int64            `json:"id"`
	State                string           `json:"state"`
	Filter               replayFilterJSON `json:"filter"`
	Matched              int64            `json:"matched"`
	Replayed             int64            `json:"replayed"`
	Skipped              int64            `json:"skipped"`
	RequestedBy          *int64           `json:"requestedBy"`
	RequestedByPrincipal string           `json:"requestedByPrincipal"`
	StartedAt            string           `json:"startedAt"`
	FinishedAt           *string          `json:"finishedAt"`
}

// replayStartedJSON is the answer of a start: the contract's {"id","state","matched"} (state is
// DONE at once when nothing matched).
type replayStartedJSON struct {
	ID      int64  `json:"id"`
	State   string `json:"state"`
	Matched int64  `json:"matched"`
}

type replayCountJSON struct {
	Matched int64 `json:"matched"`
}

func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toReplayJobJSON(j ports.ReplayJob) replayJobJSON {
	f := j.Filter.Fields()
	out := replayJobJSON{ID: j.ID, State: j.State.String(), Matched: j.Progress.Matched, Replayed: j.Progress.Replayed,
		Skipped: j.Progress.Skipped, RequestedByPrincipal: "INSTANCE_ADMIN_TOKEN", StartedAt: timestamp(j.StartedAt),
		FinishedAt: optionalTimestamp(j.FinishedAt),
		Filter: replayFilterJSON{Provider: optionalText(f.Provider), EventType: optionalText(f.EventType),
			ErrorClass: optionalText(f.ErrorClass), DeadAfter: optionalTimestamp(f.DeadAfter), DeadBefore: optionalTimestamp(f.DeadBefore),
			ReceivedAfter: optionalTimestamp(f.ReceivedAfter), ReceivedBefore: optionalTimestamp(f.ReceivedBefore)}}
	if j.RequestedBy != ports.InstanceAdminAccountID {
		by := j.RequestedBy
		out.RequestedBy, out.RequestedByPrincipal = &by, "ACCOUNT"
	}
	return out
}

// replayRequest is a parsed POST …/replays body.
type replayRequest struct {
	filter replayjob.Filter
	dryRun bool
}

// invalidFilter is the 400 of a bad field: {"error":"invalid-filter","field":name}.
func invalidFilter(name string) error {
	return ports.Reject(ports.ErrMalformed, "invalid-filter", name)
}

// parseReplayRequest reads {"filter":{…},"dryRun":bool} (both optional; a null value is an
// absent one) and validates the filter with the service (replays.Service.Filter). Errors, 400
// invalid-filter naming the field ("filter.<name>" inside the filter): an unknown field, a
// value of the wrong JSON type, a provider this server does not run, an error class no DEAD
// row can carry, a time that is not RFC 3339, a text that is not UTF-8 or longer than
// replayjob.MaxText; "invalid-json" for a body that is no JSON object; ports.ErrTooLarge past
// maxBodyBytes.
func parseReplayRequest(c *gin.Context, svc *replays.Service) (replayRequest, error) {
	var req replayRequest
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return req, ports.ErrTooLarge
	}
	var pe *inbox.PayloadError
	if err == nil && errors.As(inbox.ValidatePayload(raw), &pe) && pe.Reason != inbox.PayloadNotJSON {
		return req, ports.Reject(ports.ErrMalformed, pe.Reason, "")
	}
	var top map[string]json.RawMessage
	if err != nil || strictDecode(raw, &top) != nil || top == nil {
		return req, ports.Reject(ports.ErrMalformed, "invalid-json", "")
	}
	var fields map[string]json.RawMessage
	for name, v := range top {
		switch name {
		case "dryRun":
			if !isNull(v) && json.Unmarshal(v, &req.dryRun) != nil {
				return req, invalidFilter("dryRun")
			}
		case "filter":
			if !isNull(v) && (json.Unmarshal(v, &fields) != nil || fields == nil) {
				return req, invalidFilter("filter")
			}
		default:
			return req, invalidFilter(name)
		}
	}
	var f replayjob.FilterFields
	texts := map[string]*string{"provider": &f.Provider, "eventType": &f.EventType, "errorClass": &f.ErrorClass}
	times := map[string]*time.Time{"deadAfter": &f.DeadAfter, "deadBefore": &f.DeadBefore,
		"receivedAfter": &f.ReceivedAfter, "receivedBefore": &f.ReceivedBefore}
	for name, v := range fields {
		if isNull(v) {
			if texts[name] == nil && times[name] == nil {
				return req, invalidFilter("filter." + name)
			}
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return req, invalidFilter("filter." + name)
		}
		switch {
		case texts[name] != nil:
			*texts[name] = s
		case times[name] != nil:
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return req, invalidFilter("filter." + name)
			}
			*times[name] = at
		default:
			return req, invalidFilter("filter." + name)
		}
	}
	filter, err := svc.Filter(f)
	var fe *replayjob.FieldError
	if errors.As(err, &fe) {
		return req, invalidFilter("filter." + fe.Field)
	}
	if err != nil {
		return req, err
	}
	req.filter = filter
	return req, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// strictDecode decodes one JSON value and refuses trailing data.
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

// badInput answers 400 naming the field: {"error":"<reason>","field":"<name>"}; other errors go
// through the one error map.
func (h replayHandlers) badInput(c *gin.Context, err error) {
	var rej *ports.RejectedError
	if errors.As(err, &rej) && errors.Is(err, ports.ErrMalformed) && rej.Detail != "" {
		c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": rej.Reason, "field": rej.Detail})
		return
	}
	h.fail(c, err)
}

// refused answers a start the workspace's limits refused: 409 replay-limit (the error map's
// status and code) naming the limit and its value, {"error":"replay-limit","limit":"running"|
// "rows","max":N}, so the operator knows to wait for a job or to narrow the filter; other
// errors go through the one error map.
func (h replayHandlers) refused(c *gin.Context, err error) {
	var le *replayjob.LimitError
	if errors.As(err, &le) {
		status, code := httperr.Status(err)
		c.AbortWithStatusJSON(status, gin.H{"error": code, "limit": le.Limit.String(), "max": le.Max})
		return
	}
	h.fail(c, err)
}

func (h replayHandlers) start(c *gin.Context) {
	req, err := parseReplayRequest(c, h.svc)
	if err != nil {
		h.badInput(c, err)
		return
	}
	ctx := c.Request.Context()
	if req.dryRun {
		n, err := h.svc.Count(ctx, managementapi.MemberWorkspaceOf(c), req.filter)
		if err != nil {
			h.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, replayCountJSON{Matched: n})
		return
	}
	m, err := h.auth.Manage(ctx, managementapi.PrincipalOf(c), c.Param(managementapi.WorkspaceParam))
	if err != nil {
		h.fail(c, err)
		return
	}
	j, err := h.svc.Start(ctx, m, req.filter)
	if err != nil {
		h.refused(c, err)
		return
	}
	c.JSON(http.StatusAccepted, replayStartedJSON{ID: j.ID, State: j.State.String(), Matched: j.Progress.Matched})
}

func (h replayHandlers) list(c *gin.Context) {
	page, err := managementapi.Paging(c)
	if err != nil {
		h.badInput(c, err)
		return
	}
	jobs, total, err := h.svc.List(c.Request.Context(), managementapi.MemberWorkspaceOf(c), page)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]replayJobJSON, len(jobs))
	for i, j := range jobs {
		out[i] = toReplayJobJSON(j)
	}
	c.JSON(http.StatusOK, managementapi.NewPage(out, page, total))
}

func (h replayHandlers) get(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	j, err := h.svc.Job(c.Request.Context(), managementapi.MemberWorkspaceOf(c), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toReplayJobJSON(j))
}

func (h replayHandlers) cancel(c *gin.Context) {
	id, err := idParam(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	m, err := h.auth.Manage(ctx, managementapi.PrincipalOf(c), c.Param(managementapi.WorkspaceParam))
	if err != nil {
		h.fail(c, err)
		return
	}
	j, err := h.svc.Cancel(ctx, m, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toReplayJobJSON(j))
}
