// Package changes is the change feed's use cases: reading a workspace's feed with an
// optional long-poll wait, the in-process signal that wakes waiting readers when this server
// commits a change, and retention on one server.
package changes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ErrTooManyWaiters: the server already holds MaxWaiting waiting requests; the caller should
// come back later (503).
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
}

func (c *Config) setDefaults() {
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.MaxWaiting <= 0 {
		c.MaxWaiting = 256
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
	slots   chan struct{}
	stop    chan struct{}
	mu      sync.Mutex
	waiting int
}

// NewFeed makes the feed; every dependency is required.
func NewFeed(cfg Config, store ports.ChangeFeed, signal *Signal, metrics ports.ChangeMetrics) (*Feed, error) {
	cfg.setDefaults()
	if store == nil || signal == nil || metrics == nil {
		return nil, errors.New("change feed: store, signal and metrics are required")
	}
	metrics.ChangeFeedWaiting(0)
	return &Feed{cfg: cfg, store: store, signal: signal, metrics: metrics,
		slots: make(chan struct{}, cfg.MaxWaiting), stop: make(chan struct{})}, nil
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

// Read returns up to limit changes after cursor. With wait > 0 and nothing to hand out, it
// waits until a change can be handed out (woken by this server's commits, reading again every
// PollInterval for other servers' commits) or wait passed or ctx ended (then an empty page,
// not an error). Errors: change.ErrCursorExpired, ErrTooManyWaiters, the store's errors.
func (f *Feed) Read(ctx context.Context, workspaceID int64, after change.Cursor, limit int, wait time.Duration) ([]change.Stored, error) {
	// Take the wake channel before reading, so a commit between the read and the wait is
	// not missed.
	woken := f.signal.Changed()
	page, err := f.store.Changes(ctx, workspaceID, after, limit)
	if err != nil || len(page) > 0 || wait <= 0 {
		return page, err
	}
	select {
	case f.slots <- struct{}{}:
	default:
		return nil, ErrTooManyWaiters
	}
	f.gauge(+1)
	defer func() {
		<-f.slots
		f.gauge(-1)
	}()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(f.cfg.PollInterval)
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
		page, err := f.store.Changes(ctx, workspaceID, after, limit)
		if ctx.Err() != nil {
			return nil, nil
		}
		if err != nil || len(page) > 0 {
			return page, err
		}
	}
}

func (f *Feed) gauge(d int) {
	f.mu.Lock()
	f.waiting += d
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
