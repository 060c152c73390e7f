package consumer

import (
	"sync"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// lease is one row this server holds: claimed and not yet recorded, released or dropped.
type lease struct {
	ack      ports.Ack
	provider string
	// renewUntil is zero until the handler starts; then the handler's deadline, after which the
	// lease is no longer renewed (a handler that ignores its cancelled context lets the lease
	// expire, and the reaper takes the row back). Once the handler returned, renewal goes on
	// until the outcome is recorded.
	renewUntil time.Time
	returned   bool
}

// leases tracks what this server holds, for the renewer and the release on shutdown.
type leases struct {
	mu   sync.Mutex
	byID map[int64]*lease
}

func newLeases() *leases { return &leases{byID: make(map[int64]*lease)} }

func (l *leases) add(c ports.Claimed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := c.Delivery
	l.byID[d.ID()] = &lease{ack: ports.Ack{ID: d.ID(), Epoch: d.Lease().Epoch()}, provider: d.Provider().String()}
}

func (l *leases) started(id int64, deadline time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.byID[id]; ok {
		h.renewUntil = deadline
	}
}

func (l *leases) handlerReturned(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.byID[id]; ok {
		h.returned = true
	}
}

// drop forgets a lease whose outcome is written (or dropped); it is the one way out.
func (l *leases) drop(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byID, id)
}

func (l *leases) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byID)
}

// renewable lists the leases to renew at now.
func (l *leases) renewable(now time.Time) []ports.Ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := make([]ports.Ack, 0, len(l.byID))
	for _, h := range l.byID {
		if h.returned || h.renewUntil.IsZero() || now.Before(h.renewUntil) {
			acks = append(acks, h.ack)
		}
	}
	return acks
}

// all lists every lease still held (the release on shutdown).
func (l *leases) all() []ports.Ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	acks := make([]ports.Ack, 0, len(l.byID))
	for _, h := range l.byID {
		acks = append(acks, h.ack)
	}
	return acks
}

// ids lists the ids of every lease still held.
func (l *leases) ids() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, 0, len(l.byID))
	for id := range l.byID {
		ids = append(ids, id)
	}
	return ids
}
