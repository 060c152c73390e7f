package inbox

import (
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// Delivery is one admitted webhook delivery for one workspace (or, for installation control
// events, for the instance: workspace 0, stored as NULL).
type Delivery struct {
	id              int64
	workspaceID     int64
	provider        provider.Provider
	eventType       string
	deliveryKey     string
	subject         Subject
	scope           ScopeKey
	state           State
	attempt         int
	unknownFailures int
	lease           Lease
	dueAt           time.Time
	receivedAt      time.Time
	endedAt         time.Time
	errorClass      string
	replayedBy      int64
	replayedAt      time.Time
}

// Admission is what the receiver knows about a verified delivery before it is stored.
type Admission struct {
	WorkspaceID int64 // 0 for an installation control event
	Provider    provider.Provider
	EventType   string
	DeliveryKey string
	Subject     Subject
	Control     bool // an installation control event: system scope, NULL workspace
}

const maxDeliveryKey = 200

// NewDelivery makes a QUEUED delivery due at receivedAt and derives its scope: the one system
// scope for control events (which have no workspace), the workspace's subject scope otherwise.
func NewDelivery(a Admission, receivedAt time.Time) (Delivery, error) {
	switch {
	case a.Provider.IsZero():
		return Delivery{}, errors.New("delivery needs a provider")
	case a.EventType == "" || len(a.EventType) > 100:
		return Delivery{}, errors.New("delivery needs an event type of at most 100 bytes")
	case a.DeliveryKey == "" || len(a.DeliveryKey) > maxDeliveryKey:
		return Delivery{}, fmt.Errorf("delivery needs a delivery key of at most %d bytes", maxDeliveryKey)
	case a.Subject.IsZero():
		return Delivery{}, errors.New("delivery needs a subject")
	case a.Control && a.WorkspaceID != 0:
		return Delivery{}, errors.New("an installation control event belongs to no workspace")
	}
	scope := SystemScope()
	if !a.Control {
		var err error
		if scope, err = WorkspaceScope(a.WorkspaceID, a.Subject); err != nil {
			return Delivery{}, err
		}
	}
	return Delivery{
		workspaceID: a.WorkspaceID, provider: a.Provider, eventType: a.EventType,
		deliveryKey: a.DeliveryKey, subject: a.Subject, scope: scope,
		state: Queued, dueAt: receivedAt, receivedAt: receivedAt,
	}, nil
}

// Stored is the full stored form of a delivery, for RestoreDelivery.
type Stored struct {
	ID              int64
	WorkspaceID     int64
	Provider        provider.Provider
	EventType       string
	DeliveryKey     string
	Subject         string
	ScopeKey        string
	State           State
	Attempt         int
	UnknownFailures int
	LeaseEpoch      Epoch
	LeasedUntil     time.Time
	DueAt           time.Time
	ReceivedAt      time.Time
	EndedAt         time.Time
	ErrorClass      string
	ReplayedBy      int64
	ReplayedAt      time.Time
}

// RestoreDelivery rebuilds a delivery read from storage, skipping creation-time checks.
func RestoreDelivery(s Stored) Delivery {
	d := Delivery{
		id: s.ID, workspaceID: s.WorkspaceID, provider: s.Provider, eventType: s.EventType,
		deliveryKey: s.DeliveryKey, subject: RestoreSubject(s.Subject), scope: RestoreScopeKey(s.ScopeKey),
		state: s.State, attempt: s.Attempt, unknownFailures: s.UnknownFailures,
		dueAt: s.DueAt, receivedAt: s.ReceivedAt, endedAt: s.EndedAt, errorClass: s.ErrorClass,
		replayedBy: s.ReplayedBy, replayedAt: s.ReplayedAt,
	}
	if s.State == Leased {
		d.lease = Lease{epoch: s.LeaseEpoch, until: s.LeasedUntil}
	} else if s.LeaseEpoch > 0 {
		d.lease = Lease{epoch: s.LeaseEpoch} // remembered epoch; holds no right to write
	}
	return d
}

// ID is the row id; a scope's rows are handled in id order.
func (d Delivery) ID() int64 { return d.id }

// WorkspaceID is the receiving workspace, 0 for an installation row.
func (d Delivery) WorkspaceID() int64 { return d.workspaceID }

// IsInstallation reports whether the row is an installation control event (NULL workspace).
func (d Delivery) IsInstallation() bool { return d.workspaceID == 0 }

// Provider is the provider that sent the delivery.
func (d Delivery) Provider() provider.Provider { return d.provider }

// EventType is the provider's event name (X-GitHub-Event, GitLab's object kind, …).
func (d Delivery) EventType() string { return d.eventType }

// DeliveryKey is the provider's delivery id, unique per workspace and provider.
func (d Delivery) DeliveryKey() string { return d.deliveryKey }

// Subject is the resource the delivery is about, without the event.
func (d Delivery) Subject() Subject { return d.subject }

// Scope is the serial scope: one resource of one workspace, or the system scope.
func (d Delivery) Scope() ScopeKey { return d.scope }

// State is where the row stands: QUEUED, LEASED, DONE or DEAD.
func (d Delivery) State() State { return d.state }

// Attempt is how many times the row was claimed since it was stored or replayed.
func (d Delivery) Attempt() int { return d.attempt }

// UnknownFailures is how much of the unknown-failure budget the row used.
func (d Delivery) UnknownFailures() int { return d.unknownFailures }

// Lease is the row's current lease (the zero Lease unless LEASED).
func (d Delivery) Lease() Lease { return d.lease }

// DueAt is when the row may next be claimed.
func (d Delivery) DueAt() time.Time { return d.dueAt }

// ReceivedAt is when admission stored the row.
func (d Delivery) ReceivedAt() time.Time { return d.receivedAt }

// EndedAt is when the row became DONE or DEAD (zero before).
func (d Delivery) EndedAt() time.Time { return d.endedAt }

// ErrorClass is a DEAD row's error class, "" otherwise.
func (d Delivery) ErrorClass() string { return d.errorClass }

// ReplayedBy is the account that last replayed the row, 0 when never replayed or replayed with the administrator token.
func (d Delivery) ReplayedBy() int64 { return d.replayedBy }

// ReplayedAt is when the row was last replayed (zero when never).
func (d Delivery) ReplayedAt() time.Time { return d.replayedAt }

// Claim leases a due QUEUED delivery: attempt and epoch go up by one, the lease runs leaseFor
// from now. (Whether the scope is free is a question about other rows: the store answers it.)
func (d *Delivery) Claim(now time.Time, leaseFor time.Duration) error {
	if d.state != Queued {
		return &TransitionError{From: d.state, Action: "claim"}
	}
	if now.Before(d.dueAt) {
		return ErrNotDue
	}
	d.state = Leased
	d.attempt++
	d.lease = Lease{epoch: d.lease.epoch + 1, until: now.Add(leaseFor)}
	return nil
}

// checkLease refuses a write under a lease this claimer no longer holds.
func (d *Delivery) checkLease(epoch Epoch, action string) error {
	if d.state != Leased {
		if d.lease.epoch > epoch {
			return ErrLeaseLost
		}
		return fmt.Errorf("%w: %w", ErrLeaseLost, &TransitionError{From: d.state, Action: action})
	}
	if !d.lease.Holds(epoch) {
		return ErrLeaseLost
	}
	return nil
}

// Complete ends a leased delivery as DONE under the claimer's epoch.
func (d *Delivery) Complete(epoch Epoch, now time.Time) error {
	if err := d.checkLease(epoch, "complete"); err != nil {
		return err
	}
	d.state, d.endedAt, d.lease = Done, now, Lease{epoch: d.lease.epoch}
	return nil
}

// Renew extends the lease of a running handler under the claimer's epoch.
func (d *Delivery) Renew(epoch Epoch, now time.Time, leaseFor time.Duration) error {
	if err := d.checkLease(epoch, "renew"); err != nil {
		return err
	}
	l, err := d.lease.Renewed(epoch, now.Add(leaseFor))
	if err != nil {
		return err
	}
	d.lease = l
	return nil
}

// Release hands a lease back without counting the attempt (a stopping server).
func (d *Delivery) Release(epoch Epoch, now time.Time) error {
	if err := d.checkLease(epoch, "release"); err != nil {
		return err
	}
	d.state, d.lease, d.dueAt = Queued, Lease{epoch: d.lease.epoch}, now
	if d.attempt > 0 {
		d.attempt--
	}
	return nil
}

// Fail applies the policy's decision for a failed attempt under the claimer's epoch and
// returns it. A dropped decision (lease lost, erased) changes nothing.
func (d *Delivery) Fail(epoch Epoch, cause error, policy RetryPolicy, now time.Time) (Decision, error) {
	return d.FailAfter(epoch, cause, policy, 0, now)
}

// FailAfter is Fail for a row that was retried for contention `contended` times in a row just
// before this attempt (RetryPolicy.DecideAfter).
func (d *Delivery) FailAfter(epoch Epoch, cause error, policy RetryPolicy, contended int, now time.Time) (Decision, error) {
	if err := d.checkLease(epoch, "fail"); err != nil {
		return Decision{}, err
	}
	dec := policy.DecideAfter(cause, d.attempt, d.unknownFailures, contended, now)
	d.apply(dec, now)
	return dec, nil
}

func (d *Delivery) apply(dec Decision, now time.Time) {
	if dec.usesBudget {
		d.unknownFailures++
	}
	switch dec.outcome {
	case OutcomeRetried:
		d.state, d.dueAt, d.lease = Queued, dec.dueAt, Lease{epoch: d.lease.epoch}
		if !dec.countsAttempt && d.attempt > 0 {
			d.attempt--
		}
	case OutcomeDead:
		d.state, d.endedAt, d.errorClass, d.lease = Dead, now, dec.errorClass, Lease{epoch: d.lease.epoch}
	}
}

// Expire is the reaper's decision for a lease that ran out: the expiry counts against the
// unknown-failure budget (an event that stops every server cannot stop them in turn), so the row
// is QUEUED again, or DEAD with LeaseExpired once the budget is used.
func (d *Delivery) Expire(now time.Time, policy RetryPolicy) (Decision, error) {
	if d.state != Leased {
		return Decision{}, &TransitionError{From: d.state, Action: "expire"}
	}
	if !d.lease.Expired(now) {
		return Decision{}, errors.New("lease has not expired")
	}
	var dec Decision
	if policy.BudgetUsed(d.unknownFailures + 1) {
		dec = Decision{outcome: OutcomeDead, class: Unknown, cause: CauseLeaseExpired, usesBudget: true,
			errorClass: LeaseExpiredClass}
	} else {
		dec = Decision{outcome: OutcomeRetried, class: Unknown, cause: CauseLeaseExpired, dueAt: now,
			countsAttempt: true, usesBudget: true}
	}
	d.apply(dec, now)
	return dec, nil
}

// ExpireDuringOutage takes back an expired lease that ran out while the reaping server could
// not reach the database (docs/operations/database-failover.md): the holder could not renew it
// for the same reason, so the expiry is a database transport failure, not the handler's fault.
// The row is QUEUED again, due at once, with the attempt counted and the budget untouched. A
// server that restarted has seen no outage and reaps with Expire, so an event that stops every
// server still reaches DEAD.
func (d *Delivery) ExpireDuringOutage(now time.Time) (Decision, error) {
	if d.state != Leased {
		return Decision{}, &TransitionError{From: d.state, Action: "expire"}
	}
	if !d.lease.Expired(now) {
		return Decision{}, errors.New("lease has not expired")
	}
	dec := Decision{outcome: OutcomeRetried, class: Retryable, cause: CauseDatabaseTransport, dueAt: now,
		countsAttempt: true}
	d.apply(dec, now)
	return dec, nil
}

// Replay sets a DEAD delivery back to QUEUED with attempt 0 and a fresh budget, recording who
// replayed it and when. The id is kept, so the row heads its scope again; committed steps stay,
// so handling resumes rather than restarts. Replay is an explicit late event: it does not
// rewind later events of the scope.
//
// accountID 0 names the instance administrator's configured token, which has no account row
// (ports.InstanceAdminAccountID): that administrator replays installation rows, so the record
// must be able to name it; a negative id names nobody.
func (d *Delivery) Replay(accountID int64, now time.Time) error {
	if d.state != Dead {
		return &TransitionError{From: d.state, Action: "replay"}
	}
	if accountID < 0 {
		return errors.New("replay needs the replaying account")
	}
	d.state, d.attempt, d.unknownFailures = Queued, 0, 0
	d.dueAt, d.endedAt, d.errorClass = now, time.Time{}, ""
	d.replayedBy, d.replayedAt = accountID, now
	return nil
}
