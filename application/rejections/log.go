// Package rejections keeps the rejection log (CONTRACT.md "Operator API"):
// every refused webhook request is counted per minute by (provider, connection, reason).
//
// Refusals are counted in memory on the request's path (Log.Refused: a map increment under a
// mutex, no I/O), and Log.Run adds the counts to the database every few seconds (DefaultTick),
// the current minute's too, with one statement, summed into the minute's row of each key: a
// refusal is listed within 10 s of its answer on every server (all read the database), and a
// flood of unauthenticated requests never becomes a write per request.
// The number of distinct keys a server holds is bounded (MaxKeys): once it is reached, a new
// (provider, connection, reason) of the minute is counted under connection 0, whose keys the
// providers and reasons bound.
package rejections

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// Defaults of Config.
const (
	DefaultRetention = 7 * 24 * time.Hour
	DefaultMaxKeys   = 10_000
	// DefaultTick is how often Run writes the counts: a refusal is listed within 10 s of its
	// answer (CONTRACT.md), and a flood still costs one statement per tick.
	DefaultTick = 5 * time.Second
	// pruneEvery is how often a flush also deletes the minutes past the retention.
	pruneEvery = time.Minute
	// flushTimeout bounds the last flush when the server stops.
	flushTimeout = 5 * time.Second
)

// Config tunes the log; the zero value takes the defaults.
type Config struct {
	// Retention is how long the log keeps a minute (HEPHAESTUS_REJECTIONS_RETENTION).
	Retention time.Duration
	// MaxKeys bounds the keys counted in memory between flushes.
	MaxKeys int
	// Tick is how often Run writes the counts, the current minute's included (default
	// DefaultTick).
	Tick time.Duration
}

type key struct {
	minute       time.Time
	provider     string
	connectionID int64
	reason       string
}

// Log counts refusals in memory and flushes finished minutes. It is safe for concurrent use.
type Log struct {
	cfg   Config
	store ports.RejectionStore
	clock ports.Clock
	log   ports.Logger

	mu        sync.Mutex
	counts    map[key]int64
	lastPrune time.Time // when a flush last deleted the minutes past the retention
}

var _ ports.RejectionCounter = (*Log)(nil)

// New builds the log.
func New(cfg Config, store ports.RejectionStore, clock ports.Clock, log ports.Logger) (*Log, error) {
	if store == nil || clock == nil || log == nil {
		return nil, errors.New("rejections: store, clock and logger are required")
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.Retention < 0 || cfg.MaxKeys < 1 || cfg.Tick < 0 {
		return nil, errors.New("rejections: retention, max keys and tick must be positive")
	}
	return &Log{cfg: cfg, store: store, clock: clock, log: log, counts: map[key]int64{}}, nil
}

// Refused implements ports.RejectionCounter.
func (l *Log) Refused(provider string, connectionID int64, reason string) {
	k := key{minute: l.clock.Now().UTC().Truncate(time.Minute), provider: provider, connectionID: max(connectionID, 0), reason: reason}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.counts[k]; !ok && len(l.counts) >= l.cfg.MaxKeys {
		k.connectionID = 0
	}
	l.counts[k]++
}

// Keys is how many keys the log holds in memory (for specs and diagnostics).
func (l *Log) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.counts)
}

// Run writes every count, the current minute's too, each Tick until ctx ends, then once more,
// so a refusal is listed within a Tick of its answer and a stopping server loses no count it
// can still write.
func (l *Log) Run(ctx context.Context) error {
	t := time.NewTicker(l.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			if err := l.Flush(stopCtx, true); err != nil {
				l.log.Warnw("rejection log: last flush failed", "error", err.Error())
			}
			return nil
		case <-t.C:
			if err := l.Flush(ctx, true); err != nil && ctx.Err() == nil {
				l.log.Warnw("rejection log: flush failed, counts kept for the next one", "error", err.Error())
			}
		}
	}
}

// Flush writes the counts of finished minutes (all counts with everything) in one statement,
// added to what the minutes' rows hold, and, at most once a minute, deletes the minutes older
// than the retention; with nothing to write and no deletion due it does nothing. A failed
// write puts the counts back.
func (l *Log) Flush(ctx context.Context, everything bool) error {
	now := l.clock.Now().UTC()
	current := now.Truncate(time.Minute)
	l.mu.Lock()
	var out []ports.RejectionCount
	for k, n := range l.counts {
		if everything || k.minute.Before(current) {
			out = append(out, ports.RejectionCount{Minute: k.minute, Provider: k.provider, ConnectionID: k.connectionID, Reason: k.reason, Count: n})
			delete(l.counts, k)
		}
	}
	var deleteBefore time.Time
	if now.Sub(l.lastPrune) >= pruneEvery {
		deleteBefore = now.Add(-l.cfg.Retention)
	}
	l.mu.Unlock()
	if len(out) == 0 && deleteBefore.IsZero() {
		return nil
	}
	err := l.store.AddRejections(ctx, out, deleteBefore)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		for _, c := range out {
			l.counts[key{minute: c.Minute, provider: c.Provider, connectionID: c.ConnectionID, reason: c.Reason}] += c.Count
		}
		return err
	}
	if !deleteBefore.IsZero() {
		l.lastPrune = now
	}
	return nil
}

// Service reads the log for operators.
type Service struct {
	store ports.RejectionStore
}

// NewService builds the reads on store.
func NewService(store ports.RejectionStore) (*Service, error) {
	if store == nil {
		return nil, errors.New("rejections: store is required")
	}
	return &Service{store: store}, nil
}

// List pages the refusals of workspace ws's connections (ws authorised by the caller's
// membership), newest minute first.
func (s *Service) List(ctx context.Context, ws ports.Workspace, page ports.PageRequest) ([]ports.RejectionCount, int, error) {
	if ws.ID <= 0 {
		return nil, 0, ports.ErrNotFound
	}
	return s.store.ListRejections(ctx, ws.ID, page)
}

// ListAll pages every refusal, those no connection matched included: the instance
// administrator only (ports.ErrForbidden otherwise).
func (s *Service) ListAll(ctx context.Context, p ports.Principal, page ports.PageRequest) ([]ports.RejectionCount, int, error) {
	if !p.InstanceAdmin {
		return nil, 0, ports.ErrForbidden
	}
	return s.store.ListRejections(ctx, 0, page)
}
