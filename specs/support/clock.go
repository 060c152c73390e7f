package support

import (
	"sync/atomic"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// Clock is a clock a spec moves instead of waiting: the wall clock plus an offset that only
// Advance changes. Time keeps flowing, so a row the database stamped with its own clock a moment
// ago is still in the past; Advance jumps past a lease, a retry or a retention window at once.
//
// Give the same Clock to a PostgreSQL store's Config.Clock (the "now" of its SQL) and to the
// application's ports.Clock, so both sides of a lease agree on the time (ARCHITECTURE.md "Time
// in SQL"). It is safe for concurrent use.
type Clock struct {
	offset atomic.Int64
}

var _ ports.Clock = (*Clock)(nil)

// NewClock returns a clock that reads the wall clock until it is advanced.
func NewClock() *Clock { return &Clock{} }

// Now implements ports.Clock.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d. Time never runs backwards: a negative d panics.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("support.Clock: time does not run backwards")
	}
	c.offset.Add(int64(d))
}
