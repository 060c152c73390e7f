// Package changes is the change feed's use cases: reading a workspace's feed with an
// optional long-poll wait, the in-process signal that wakes waiting readers when this server
// commits a change, and retention on one server.
package changes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ErrTooManyWaiters: the server already holds MaxWaiting waiting requests, or the workspace
// MaxWaitingPerWorkspace, or the reader MaxWaitingPerReader; the caller should come back later
// (503).
var ErrTooManyWaiters = errors.New("too many waiting change feed requests")

// Signal is the in-process wake of waiting readers: Notify (after a commit that published)
// wakes every reader waiting at that moment. It holds no database connection.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewSignal makes a signal.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{})} }

// Notify wakes every current waiter; it never blocks.
func (s *Signal) Notify() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// Changed is closed at the next Notify.
func (s *Signal) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// Config tunes the feed.
type Config struct {
	// PollInterval is how often a waiting request reads again when no wake came (changes
	// committed on another server; a change held back by an older transaction in flight).
	// Default 1s.
	PollInterval time.Duration
	// MaxWaiting bounds the requests waiting at once on this server (default 256); one more
	// gets ErrTooManyWaiters.
	MaxWaiting int
	// MaxWaitingPerWorkspace bounds those of one workspace (default MaxWaiting/4, 64: the
	// members of one workspace never take more than a quarter of a server's waits, so at least
	// three other workspaces find the room they had), and MaxWaitingPerReader those of one
	// account across its workspaces (default MaxWaitingPerWorkspace/4, 16: a consumer's few
	// streams and polls and a person's browser tabs, while one member cannot fill their
	// workspace's share). One more gets ErrTooManyWaiters.
	MaxWaitingPerWorkspace int
	MaxWaitingPerReader    int
	// Recheck is the longest a waiting request goes without reading again, and so without
	// checking its reader again (default DefaultRecheck). A read checks the reader in the
	// snapshot of its page, so a waiting request whose access ended gets the error within
	// Recheck even when nothing commits.
	Recheck time.Duration
}

// DefaultRecheck is Config.Recheck's default, CONTRACT.md "Change feed"'s bound: a waiting
// request's principal is checked from state at most 1 s old.
const DefaultRecheck = time.Second

func (c *Config) setDefaults() {
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.MaxWaiting <= 0 {
		c.MaxWaiting = 256
	}
	if c.MaxWaitingPerWorkspace <= 0 {
		c.MaxWaitingPerWorkspace = max(1, c.MaxWaiting/4)
	}
	if c.MaxWaitingPerReader <= 0 {
		c.MaxWaitingPerReader = max(1, c.MaxWaitingPerWorkspace/4)
	}
	if c.Recheck <= 0 {
		c.Recheck = DefaultRecheck
	}
}

// heldBack is how soon a waiting read tries again after a wake that found nothing, and
// heldBackReads how many times at most per wake: the signal is the server's, not the
// workspace's, so a wake for another workspace must not turn every waiter into a 200 ms poll
// (the poll interval covers what is held back longer).
const (
	heldBack      = 200 * time.Millisecond
	heldBackReads = 5
)

// Feed reads the feed for the HTTP API.
type Feed struct {
	cfg     Config
	store   ports.ChangeFeed
	signal  *Signal
	metrics ports.ChangeMetrics
	stop    chan struct{}

	mu          sync.Mutex
	waiting     int
	byWorkspace map[int64]int // waiting requests per workspace, only workspaces with some
	byReader    map[int64]int // waiting requests per reader, only readers with some
}

// NewFeed makes the feed; every dependency is required.
func NewFeed(cfg Config, store ports.ChangeFeed, signal *Signal, metrics ports.ChangeMetrics) (*Feed, error) {
	cfg.setDefaults()
	if store == nil || signal == nil || metrics == nil {
		return nil, errors.New("change feed: store, signal and metrics are required")
	}
	metrics.ChangeFeedWaiting(0)
	return &Feed{cfg: cfg, store: store, signal: signal, metrics: metrics, stop: make(chan struct{}),
		byWorkspace: map[int64]int{}, byReader: map[int64]int{}}, nil
}

// Run waits until ctx ends (the server stops), then closes Stopping, which ends the open
// streams and waits of the HTTP API. It is a runner of the App, stopped when the server starts
// to stop.
func (f *Feed) Run(ctx context.Context) error {
	<-ctx.Done()
	close(f.stop)
	return nil
}

// Stopping is closed when the server stops.
func (f *Feed) Stopping() <-chan struct{} { return f.stop }

// ReadAs returns up to limit changes of who's workspace after cursor, as who may see them
// (Shown). Every read checks who in the snapshot of its page (ports.ChangeFeed.ChangesFor), so
// nothing handed out committed after who's access ended. With wait > 0 and nothing to hand
// out, it waits until a change can be handed out (woken by this server's commits, reading
// again every PollInterval for other servers' commits, and at least every Recheck) or wait
// passed or ctx ended (then an empty page, not an error); the wait counts against who's
// workspace's and account's shares of the server's waits. Errors: ports.ErrUnauthenticated
// (the token revoked or expired, the account disabled), ports.ErrForbidden (no longer a
// member), ports.ErrNotFound (the workspace deleted), change.ErrCursorExpired,
// ErrTooManyWaiters, the store's errors.
func (f *Feed) ReadAs(ctx context.Context, who ports.FeedReader, after change.Cursor, limit int, wait time.Duration) ([]change.Stored, error) {
	// Take the wake channel before reading, so a commit between the read and the wait is
	// not missed.
	woken := f.signal.Changed()
	page, err := f.read(ctx, who, after, limit)
	if err != nil || len(page) > 0 || wait <= 0 {
		return page, err
	}
	if !f.enter(who) {
		return nil, ErrTooManyWaiters
	}
	defer f.leave(who)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(min(f.cfg.PollInterval, f.cfg.Recheck))
	defer poll.Stop()
	// soon is set once a wake found nothing to hand out: the change this server committed may
	// be held back by an older transaction of the database still in flight, so it reads again
	// every heldBack, heldBackReads times at most.
	var (
		soon  <-chan time.Time
		quick int
	)
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-woken:
			soon, quick = time.After(heldBack), heldBackReads
		case <-soon:
			if quick--; quick > 0 {
				soon = time.After(heldBack)
			} else {
				soon = nil
			}
		case <-poll.C:
		}
		woken = f.signal.Changed()
		page, err := f.read(ctx, who, after, limit)
		if ctx.Err() != nil {
			return nil, nil
		}
		if err != nil || len(page) > 0 {
			return page, err
		}
	}
}

// read is one read of a page for who, checked in the page's snapshot.
func (f *Feed) read(ctx context.Context, who ports.FeedReader, after change.Cursor, limit int) ([]change.Stored, error) {
	page, state, err := f.store.ChangesFor(ctx, who, after, limit)
	if err != nil {
		return nil, err
	}
	return shown(who, state, page)
}

// shown is page as who may see it, decided on who's state in the page's snapshot: nothing and
// an error once the access is gone (the principal's token or account no longer authenticates,
// the workspace is gone, the principal is no member and not the instance administrator), the
// connection.* changes without what only the workspace's ADMINs may see for a MEMBER
// (change.Stored.ForMember), everything for an ADMIN and the instance administrator.
func shown(who ports.FeedReader, st ports.FeedReaderState, page []change.Stored) ([]change.Stored, error) {
	p := who.Principal
	switch {
	case !st.Authenticated:
		return nil, fmt.Errorf("change feed reader %d: %w", p.AccountID, ports.ErrUnauthenticated)
	case !st.WorkspaceExists:
		return nil, fmt.Errorf("change feed of workspace %d: %w", who.WorkspaceID, ports.ErrNotFound)
	case p.InstanceAdmin || st.Role.Manages():
		return page, nil
	case st.Role.IsZero():
		return nil, fmt.Errorf("change feed reader %d in workspace %d: %w", p.AccountID, who.WorkspaceID, ports.ErrForbidden)
	}
	out := make([]change.Stored, len(page))
	for i, c := range page {
		out[i] = c.ForMember()
	}
	return out, nil
}

// enter counts who as waiting, or reports false when the server, its workspace or its account
// already holds its share of waits. The configured administrator token, which is no account,
// is counted per workspace and server only.
func (f *Feed) enter(who ports.FeedReader) bool {
	reader := who.Principal.AccountID
	f.mu.Lock()
	switch {
	case f.waiting >= f.cfg.MaxWaiting,
		f.byWorkspace[who.WorkspaceID] >= f.cfg.MaxWaitingPerWorkspace,
		reader != ports.InstanceAdminAccountID && f.byReader[reader] >= f.cfg.MaxWaitingPerReader:
		f.mu.Unlock()
		return false
	}
	f.waiting++
	f.byWorkspace[who.WorkspaceID]++
	if reader != ports.InstanceAdminAccountID {
		f.byReader[reader]++
	}
	n := f.waiting
	f.mu.Unlock()
	f.metrics.ChangeFeedWaiting(n)
	return true
}

func (f *Feed) leave(who ports.FeedReader) {
	f.mu.Lock()
	f.waiting--
	if f.byWorkspace[who.WorkspaceID]--; f.byWorkspace[who.WorkspaceID] <= 0 {
		delete(f.byWorkspace, who.WorkspaceID)
	}
	if reader := who.Principal.AccountID; reader != ports.InstanceAdminAccountID {
		if f.byReader[reader]--; f.byReader[reader] <= 0 {
			delete(f.byReader, reader)
		}
	}
	n := f.waiting
	f.mu.Unlock()
	f.metrics.ChangeFeedWaiting(n)
}

// Waiting is the number of requests waiting now.
func (f *Feed) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting
}
