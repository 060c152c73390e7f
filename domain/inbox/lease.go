package inbox

import (
	"errors"
	"time"
)

// Epoch numbers the leases of one row. Each claim increments it; every later write of the
// claimer names it and changes nothing under a newer epoch.
type Epoch int64

// Lease is a time-bounded, epoch-numbered right to handle one row. The row, not an advisory
// lock, holds the scope: a handler runs outside any transaction for up to its timeout, and a
// session lock would pin a pooled connection and end with the session, not at a fenced expiry.
type Lease struct {
	epoch Epoch
	until time.Time
}

// NewLease makes a lease; the epoch is positive and the expiry set.
func NewLease(epoch Epoch, until time.Time) (Lease, error) {
	if epoch <= 0 {
		return Lease{}, errors.New("lease epoch must be positive")
	}
	if until.IsZero() {
		return Lease{}, errors.New("lease expiry must be set")
	}
	return Lease{epoch: epoch, until: until}, nil
}

// Epoch is the lease's fencing epoch: writes under an older epoch change nothing.
func (l Lease) Epoch() Epoch { return l.epoch }

// Until is when the lease expires unless renewed.
func (l Lease) Until() time.Time { return l.until }

// IsZero reports whether l is no lease.
func (l Lease) IsZero() bool { return l.epoch == 0 }

// Expired reports whether the lease has run out at now.
func (l Lease) Expired(now time.Time) bool {
	return !l.IsZero() && !now.Before(l.until)
}

// Holds reports whether a write naming epoch may act under this lease.
func (l Lease) Holds(epoch Epoch) bool { return !l.IsZero() && l.epoch == epoch }

// Renewed extends the lease to until under the same epoch. A renewal never shortens a lease.
func (l Lease) Renewed(epoch Epoch, until time.Time) (Lease, error) {
	if !l.Holds(epoch) {
		return Lease{}, ErrLeaseLost
	}
	if until.Before(l.until) {
		until = l.until
	}
	return Lease{epoch: l.epoch, until: until}, nil
}

// LeaseTiming is the lease length, how often a running handler renews it, and how long a
// handler may run in all. Renewal must come well inside the lease.
type LeaseTiming struct {
	duration       time.Duration
	renewInterval  time.Duration
	handlerTimeout time.Duration
}

// NewLeaseTiming validates lease, renewal and timeout (defaults 2m, 30s, 30m).
func NewLeaseTiming(duration, renewInterval, handlerTimeout time.Duration) (LeaseTiming, error) {
	switch {
	case duration <= 0:
		return LeaseTiming{}, errors.New("lease duration must be positive")
	case renewInterval <= 0 || renewInterval >= duration:
		return LeaseTiming{}, errors.New("renew interval must be positive and shorter than the lease")
	case handlerTimeout <= 0:
		return LeaseTiming{}, errors.New("handler timeout must be positive")
	}
	return LeaseTiming{duration: duration, renewInterval: renewInterval, handlerTimeout: handlerTimeout}, nil
}

// Duration is how long a claim or renewal leases a row.
func (t LeaseTiming) Duration() time.Duration { return t.duration }

// RenewInterval is how often a running handler's lease is renewed.
func (t LeaseTiming) RenewInterval() time.Duration { return t.renewInterval }

// HandlerTimeout is the longest a handler may run (and its lease be renewed).
func (t LeaseTiming) HandlerTimeout() time.Duration { return t.handlerTimeout }

// Outage is the span in which a server could not reach the database: from its first failed
// store call to its last (docs/operations/database-failover.md). Lease is the lease length the
// servers grant.
type Outage struct {
	From, To time.Time
	Lease    time.Duration
}

// Covers reports whether the lease l was running at some time during the outage, judged by
// its end (the start is the end less the lease length): its holder's renewals could have
// failed with the outage, so its expiry is no evidence against its handler.
func (o Outage) Covers(l Lease) bool {
	if o.From.IsZero() || l.until.IsZero() {
		return false
	}
	return !l.until.Before(o.From) && !l.until.Add(-o.Lease).After(o.To)
}
