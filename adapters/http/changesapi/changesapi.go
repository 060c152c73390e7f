// Package changesapi serves a workspace's change feed:
//
//	GET /api/workspaces/{ws}/changes?after={cursor}&limit=100&wait=30s
//
// as JSON ({"changes":[{"id","cursor","type","subject","occurredAt","data"}],"next":"…"}) or,
// with Accept: text/event-stream, as Server-Sent Events (each event's id: is its cursor;
// Last-Event-ID resumes; a comment line every heartbeat interval keeps proxies from closing an
// idle stream; the stream ends when the client goes away, the server stops, the caller's access
// ends or the stream is StreamMax old, and the client resumes with Last-Event-ID).
//
// Long-lived answers re-authorise: a long poll and a stream check their caller again every
// Recheck (15 s): a token revoked or expired, an account disabled or a membership removed ends
// a stream at once and answers a long poll 401 or 403.
//
// Access (managementapi.RequireMember, as the read APIs): every member of the workspace, and
// the instance administrator; 401 without a valid token, 404 for an unknown workspace, 403 for
// a known workspace the caller is no member of. Each workspace reads only its own changes.
//
// limit is 1..100 (default 100); wait is a duration up to 60s (default none): with nothing to
// hand out, the answer waits until a change can be handed out, then answers at once. A bad
// cursor, limit or wait is 400 (invalid-cursor, invalid-limit, invalid-wait); a cursor older
// than the retained range is 410 cursor-expired; too many waiting requests on this server, or
// of the workspace, or of the caller (changes.Config's shares) is 503 too-many-waiters with
// Retry-After.
package changesapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Reader is the feed; *changes.Feed is one. A wait counts against the waiter's workspace's and
// reader's shares of the server's waits.
type Reader interface {
	ReadAs(ctx context.Context, who changes.Waiter, after change.Cursor, limit int, wait time.Duration) ([]change.Stored, error)
}

// Defaults of Config.
const (
	// DefaultRecheck: how often a long poll or stream re-authorises its caller (CONTRACT.md
	// "Change feed": at least every 15 s).
	DefaultRecheck = 15 * time.Second
	// DefaultStreamMax is HEPHAESTUS_CHANGES_STREAM_MAX's default: a stream then ends and the
	// client resumes with Last-Event-ID, so a stream does not pin a server, a connection or a
	// wait slot for ever (a deploy drains in minutes, not days).
	DefaultStreamMax = 15 * time.Minute
)

// Config is what the route needs.
type Config struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Feed    Reader
	// Stopping is closed when the server stops: open streams end (required).
	Stopping <-chan struct{}
	// Heartbeat is the interval of SSE comment lines (default 15s); each SSE read waits up to
	// it for a change.
	Heartbeat time.Duration
	// Recheck is how often a long poll or an open stream re-authorises its caller: the token
	// still valid, the account enabled and still a member (default DefaultRecheck). When the
	// access ended, a long poll answers 401/403 and a stream ends at once.
	Recheck time.Duration
	// StreamMax is the longest a stream lasts (HEPHAESTUS_CHANGES_STREAM_MAX, default
	// DefaultStreamMax); then it ends and the client resumes with Last-Event-ID.
	StreamMax time.Duration
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Register adds the route to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Auth == nil || cfg.Members == nil || cfg.Feed == nil || cfg.Stopping == nil {
		return errors.New("changes api: an authenticator, a member directory, a feed and a stop channel are required")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = DefaultRecheck
	}
	if cfg.StreamMax <= 0 {
		cfg.StreamMax = DefaultStreamMax
	}
	a := api{cfg: cfg}
	r.GET("/api/workspaces/:"+managementapi.WorkspaceParam+"/changes",
		managementapi.RequireAuth(cfg.Auth), managementapi.RequireMember(cfg.Members), a.changes)
	return nil
}

type api struct{ cfg Config }

type changeJSON struct {
	ID         int64           `json:"id"`
	Cursor     string          `json:"cursor"`
	Type       string          `json:"type"`
	Subject    string          `json:"subject"`
	OccurredAt string          `json:"occurredAt"`
	Data       json.RawMessage `json:"data"`
}

type pageJSON struct {
	Changes []changeJSON `json:"changes"`
	Next    string       `json:"next"`
}

func toJSON(c change.Stored) changeJSON {
	return changeJSON{ID: c.ID, Cursor: c.Cursor.String(), Type: c.Type, Subject: c.Subject,
		OccurredAt: c.OccurredAt.UTC().Format(time.RFC3339Nano), Data: c.Data}
}

// request is a feed request's validated query.
type request struct {
	after change.Cursor
	limit int
	wait  time.Duration
}

func parse(c *gin.Context, sse bool) (request, string, bool) {
	var (
		r   request
		err error
	)
	after := c.Query("after")
	if sse && after == "" {
		after = c.GetHeader("Last-Event-ID")
	}
	if r.after, err = change.ParseCursor(after); err != nil {
		return r, "invalid-cursor", false
	}
	if r.limit, err = change.ParseLimit(c.Query("limit")); err != nil {
		return r, "invalid-limit", false
	}
	if r.wait, err = change.ParseWait(c.Query("wait")); err != nil {
		return r, "invalid-wait", false
	}
	return r, "", true
}

func (a api) fail(c *gin.Context, err error) {
	switch {
	case errors.Is(err, change.ErrCursorExpired):
		httperr.WriteCode(c, http.StatusGone, "cursor-expired")
	case errors.Is(err, changes.ErrTooManyWaiters):
		httperr.WriteCode(c, http.StatusServiceUnavailable, "too-many-waiters")
	default:
		if status, _ := httperr.Status(err); status == http.StatusInternalServerError && a.cfg.Log != nil {
			a.cfg.Log.Errorw("change feed read failed", "route", c.FullPath(), "error", err.Error())
		}
		httperr.Write(c, err)
	}
}

func wantsStream(c *gin.Context) bool {
	return strings.Contains(c.GetHeader("Accept"), "text/event-stream")
}

func (a api) changes(c *gin.Context) {
	sse := wantsStream(c)
	req, code, ok := parse(c, sse)
	if !ok {
		httperr.WriteCode(c, http.StatusBadRequest, code)
		return
	}
	who := changes.Waiter{WorkspaceID: managementapi.MemberWorkspaceOf(c).ID,
		Reader: managementapi.PrincipalOf(c).AccountID}
	if sse {
		a.stream(c, who, req)
		return
	}
	ctx, cancel := a.untilStopping(c.Request.Context())
	defer cancel()
	// A long poll waits in slices of at most Recheck, re-authorising its caller between them.
	var (
		page []change.Stored
		err  error
	)
	for left := req.wait; ; {
		slice := min(left, a.cfg.Recheck)
		page, err = a.cfg.Feed.ReadAs(ctx, who, req.after, req.limit, slice)
		if left -= slice; err != nil || len(page) > 0 || left <= 0 || ctx.Err() != nil {
			break
		}
		if err = a.recheck(ctx, c); err != nil {
			break
		}
	}
	if err != nil {
		a.fail(c, err)
		return
	}
	out := pageJSON{Changes: make([]changeJSON, 0, len(page)), Next: req.after.String()}
	for _, ch := range page {
		out.Changes = append(out.Changes, toJSON(ch))
	}
	if len(page) > 0 {
		out.Next = page[len(page)-1].Cursor.String()
	}
	c.JSON(http.StatusOK, out)
}

// untilStopping is ctx, also cancelled when the server stops.
func (a api) untilStopping(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.cfg.Stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// recheck re-authorises the caller of a long-lived response, logging why it ends.
func (a api) recheck(ctx context.Context, c *gin.Context) error {
	err := managementapi.RecheckMember(ctx, c, a.cfg.Auth, a.cfg.Members)
	if err != nil && ctx.Err() == nil && a.cfg.Log != nil {
		status, _ := httperr.Status(err)
		a.cfg.Log.Infow("change feed caller no longer authorised; the response ends", "route", c.FullPath(),
			"accountId", managementapi.PrincipalOf(c).AccountID, "status", status)
	}
	return err
}

// stream serves the feed as Server-Sent Events until the client goes away, the server stops,
// the caller's access ends (re-checked every Recheck) or the stream is StreamMax old. The
// first read decides the status: a bad or expired cursor is answered as JSON.
func (a api) stream(c *gin.Context, who changes.Waiter, req request) {
	ctx, cancel := a.untilStopping(c.Request.Context())
	defer cancel()
	page, err := a.cfg.Feed.ReadAs(ctx, who, req.after, req.limit, 0)
	if err != nil {
		a.fail(c, err)
		return
	}
	started := time.Now()
	checked, wrote := started, started
	w := c.Writer
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	cursor := req.after
	first := true
	for {
		// A stream outlives the server's write timeout: each write gets its own deadline.
		_ = rc.SetWriteDeadline(time.Now().Add(a.cfg.Heartbeat + time.Minute))
		if len(page) == 0 && (first || time.Since(wrote) >= a.cfg.Heartbeat) {
			_, err = fmt.Fprint(w, ": heartbeat\n\n")
			wrote = time.Now()
		}
		first = false
		if len(page) > 0 {
			wrote = time.Now()
		}
		for _, ch := range page {
			body, merr := json.Marshal(toJSON(ch))
			if merr != nil {
				return
			}
			if _, err = fmt.Fprintf(w, "id: %s\nevent: change\ndata: %s\n\n", ch.Cursor, body); err != nil {
				break
			}
			cursor = ch.Cursor
		}
		if err != nil || rc.Flush() != nil || ctx.Err() != nil {
			return
		}
		age := time.Since(started)
		if age >= a.cfg.StreamMax {
			return // the client resumes with Last-Event-ID
		}
		if time.Since(checked) >= a.cfg.Recheck {
			if a.recheck(ctx, c) != nil {
				return
			}
			checked = time.Now()
		}
		// Wait no longer than the next heartbeat, recheck or the stream's end is due.
		wait := min(a.cfg.Heartbeat-time.Since(wrote), a.cfg.Recheck-time.Since(checked), a.cfg.StreamMax-age)
		page, err = a.cfg.Feed.ReadAs(ctx, who, cursor, req.limit, max(wait, time.Millisecond))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The status is sent; an error ends the stream and the client resumes from its
			// Last-Event-ID.
			if a.cfg.Log != nil && !errors.Is(err, changes.ErrTooManyWaiters) {
				a.cfg.Log.Warnw("change feed stream ended on a read error", "workspaceId", who.WorkspaceID, "error", err.Error())
			}
			return
		}
	}
}
