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
// Long-lived answers re-authorise: every read of the feed checks its caller in the snapshot of
// the page it reads (changes.Feed.ReadAs), before the page is answered or sent, and a waiting
// read reads again at least every second. So nothing committed after the caller's token was
// revoked or expired, its account disabled, its membership removed or its workspace deleted is
// handed out; a long poll then answers 401, 403 or 404, and a stream ends (its status was
// sent; the client's reconnect gets the error).
//
// What a caller sees: a MEMBER sees the connection.* changes without what only the
// workspace's ADMINs may see (change.Stored.ForMember), decided on the role of the same
// snapshot; an ADMIN and the instance administrator see every change whole.
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
	// ReadAs errors: ports.ErrUnauthenticated, ports.ErrForbidden, ports.ErrNotFound when the
	// caller's access ended, change.ErrCursorExpired, changes.ErrTooManyWaiters, a store
	// failure.
	ReadAs(ctx context.Context, who ports.FeedReader, after change.Cursor, limit int, wait time.Duration) ([]change.Stored, error)
}

// Defaults of Config.
const (
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
	case errors.Is(err, ports.ErrUnauthenticated):
		// As RequireAuth answers a token that does not authenticate.
		c.Header("WWW-Authenticate", `Bearer realm="hephaestus"`)
		httperr.Write(c, err)
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
	who := ports.FeedReader{WorkspaceID: managementapi.MemberWorkspaceOf(c).ID, Principal: managementapi.PrincipalOf(c)}
	if sse {
		a.stream(c, who, req)
		return
	}
	ctx, cancel := a.untilStopping(c.Request.Context())
	defer cancel()
	// Every read of the wait checks the caller in its page's snapshot: a caller whose access
	// ended gets 401, 403 or 404 instead of the page.
	page, err := a.cfg.Feed.ReadAs(ctx, who, req.after, req.limit, req.wait)
	if err != nil {
		a.ended(c, err)
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

// ended logs that a long-lived answer ends because its caller's access ended (401, 403, 404);
// other errors are logged where they are answered.
func (a api) ended(c *gin.Context, err error) {
	if a.cfg.Log == nil || !accessEnded(err) {
		return
	}
	status, _ := httperr.Status(err)
	a.cfg.Log.Infow("change feed caller no longer authorised; the response ends", "route", c.FullPath(),
		"accountId", managementapi.PrincipalOf(c).AccountID, "status", status)
}

func accessEnded(err error) bool {
	return errors.Is(err, ports.ErrUnauthenticated) || errors.Is(err, ports.ErrForbidden) || errors.Is(err, ports.ErrNotFound)
}

// stream serves the feed as Server-Sent Events until the client goes away, the server stops,
// the caller's access ends or the stream is StreamMax old. The first read decides the status:
// a bad or expired cursor, or an access that ended since the request was authorised, is
// answered as JSON. Every later batch comes from a read that checked the caller in its page's
// snapshot (a waiting read reads again at least every second), so a batch is sent only while
// the access holds, and the stream ends at the first read that finds it gone.
func (a api) stream(c *gin.Context, who ports.FeedReader, req request) {
	ctx, cancel := a.untilStopping(c.Request.Context())
	defer cancel()
	page, err := a.cfg.Feed.ReadAs(ctx, who, req.after, req.limit, 0)
	if err != nil {
		a.ended(c, err)
		a.fail(c, err)
		return
	}
	started := time.Now()
	wrote := started
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
		// Wait no longer than the next heartbeat or the stream's end is due.
		wait := min(a.cfg.Heartbeat-time.Since(wrote), a.cfg.StreamMax-age)
		page, err = a.cfg.Feed.ReadAs(ctx, who, cursor, req.limit, max(wait, time.Millisecond))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The status is sent; an error ends the stream and the client resumes from its
			// Last-Event-ID (and gets the error if its access ended).
			if accessEnded(err) {
				a.ended(c, err)
				return
			}
			if a.cfg.Log != nil && !errors.Is(err, changes.ErrTooManyWaiters) {
				a.cfg.Log.Warnw("change feed stream ended on a read error", "workspaceId", who.WorkspaceID, "error", err.Error())
			}
			return
		}
	}
}
