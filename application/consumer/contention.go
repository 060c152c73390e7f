package consumer

import (
	"sync"
	"time"
)

// contentionMemory remembers, per row, how many times in a row this server retried it for
// expected contention, so the domain can grow the row's contention delay (a held erasure fence
// costs a few attempts per row, not a spin). It is this server's memory only: a row another
// server claims next starts its streak again there, which keeps the delay short, never long.
// Entries end with any other outcome of the row here, or after streakTTL without a new
// contention retry (the row went elsewhere, or was erased).
type contentionMemory struct {
	mu   sync.Mutex
	rows map[int64]streak
}

type streak struct {
	n    int
	last time.Time
}

// streakTTL is far above the longest contention delay: an entry older than this belongs to a
// streak that ended elsewhere.
const streakTTL = time.Minute

// pruneAt is the size from which recording prunes ended streaks.
const pruneAt = 1024

func newContentionMemory() *contentionMemory {
	return &contentionMemory{rows: make(map[int64]streak)}
}

// streak is how many contention retries of id came just before this attempt.
func (m *contentionMemory) streak(id int64, now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.rows[id]
	if !ok || now.Sub(s.last) > streakTTL {
		return 0
	}
	return s.n
}

// contended records one more contention retry of id.
func (m *contentionMemory) contended(id int64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.rows[id]
	if now.Sub(s.last) > streakTTL {
		s.n = 0
	}
	m.rows[id] = streak{n: s.n + 1, last: now}
	if len(m.rows) >= pruneAt {
		for k, v := range m.rows {
			if now.Sub(v.last) > streakTTL {
				delete(m.rows, k)
			}
		}
	}
}

// ended forgets id's streak: the row had another outcome.
func (m *contentionMemory) ended(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, id)
}

// dueWake wakes the claim loop when the earliest retry this server scheduled inside the poll
// interval is due, so a row retried after a contention delay of a few milliseconds is claimed
// then, not at the next poll. One timer, reset to the earliest pending due time.
type dueWake struct {
	mu    sync.Mutex
	timer *time.Timer
	at    time.Time
	fire  func()
}

func newDueWake(fire func()) *dueWake { return &dueWake{fire: fire} }

// at arms the wake for due (in d from now) unless an earlier one is pending.
func (w *dueWake) wakeIn(d time.Duration, now time.Time) {
	due := now.Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil && !w.at.IsZero() && !due.Before(w.at) {
		return
	}
	w.at = due
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fired)
		return
	}
	w.timer.Reset(d)
}

func (w *dueWake) fired() {
	w.mu.Lock()
	w.at = time.Time{}
	w.mu.Unlock()
	w.fire()
}

// stop cancels a pending wake (Run is returning).
func (w *dueWake) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}
