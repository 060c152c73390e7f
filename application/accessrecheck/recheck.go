// Package accessrecheck is the periodic access recheck of subscriptions that a connection's
// own credential vouches for (GitHub PAT): on the one server holding the "access-recheck"
// singleton lease, every interval, each such subscription is checked again with the
// provider, and one the credential can no longer read becomes REVOKED with the provider's
// cause, so it stops routing deliveries (admission reads only the stored access).
package accessrecheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/periodic"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Singleton is the singleton_lease row that picks the one server running the recheck.
const Singleton = "access-recheck"

// Config tunes the recheck.
type Config struct {
	// Owner names this server in singleton_lease (the server id). Required.
	Owner string
	// Interval between passes (HEPHAESTUS_ACCESS_RECHECK_INTERVAL, default 24h). A pass
	// rechecks every subscription not checked since the pass began.
	Interval time.Duration
	// Batch is how many subscriptions one read returns (default 200).
	Batch int
	// CheckTimeout bounds one provider call (default 30s).
	CheckTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Interval == 0 {
		c.Interval = 24 * time.Hour
	}
	if c.Batch == 0 {
		c.Batch = 200
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = 30 * time.Second
	}
}

func (c Config) validate() error {
	switch {
	case c.Owner == "":
		return errors.New("access recheck: Owner is required")
	case c.Interval < 0 || c.Batch < 0 || c.CheckTimeout < 0:
		return errors.New("access recheck: Interval, Batch and CheckTimeout must not be negative")
	}
	return nil
}

// Recheck runs the passes. It starts no goroutine: Run does the work itself.
type Recheck struct {
	cfg      Config
	store    ports.AccessRecheckStore
	lease    ports.SingletonLease
	secrets  ports.SecretBox
	checkers map[string]contract.ResourceAccessChecker
	kinds    []string
	own      []string // kinds whose checkers find their own credential (contract.OwnCredential)
	log      ports.Logger
	clock    ports.Clock
}

// New validates cfg and builds the recheck; every dependency is required, checkers may be
// empty (then a pass checks nothing).
func New(cfg Config, store ports.AccessRecheckStore, lease ports.SingletonLease, secrets ports.SecretBox,
	checkers []contract.ResourceAccessChecker, log ports.Logger, clock ports.Clock,
) (*Recheck, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if store == nil || lease == nil || secrets == nil || log == nil || clock == nil {
		return nil, errors.New("access recheck: store, lease, secret box, logger and clock are required")
	}
	r := &Recheck{cfg: cfg, store: store, lease: lease, secrets: secrets, log: log, clock: clock,
		checkers: make(map[string]contract.ResourceAccessChecker, len(checkers))}
	for _, c := range checkers {
		if c == nil {
			return nil, errors.New("access recheck: nil checker")
		}
		r.checkers[c.Kind().String()] = c
		r.kinds = append(r.kinds, c.Kind().String())
		if _, own := c.(contract.OwnCredential); own {
			r.own = append(r.own, c.Kind().String())
		}
	}
	return r, nil
}

// Run makes a pass at once and then every Interval until ctx ends, then gives its
// lease up (periodic.GiveUp) and returns nil.
func (r *Recheck) Run(ctx context.Context) error {
	defer periodic.GiveUp(r.lease, Singleton, r.cfg.Owner, func(err error) {
		r.log.Warnw("access recheck could not give its lease up; another server takes it when it runs out", "owner", r.cfg.Owner, "error", err.Error())
	})
	return periodic.Every(ctx, r.cfg.Interval, func(ctx context.Context) error {
		_, err := r.RunOnce(ctx)
		return err
	}, func(err error) {
		r.log.Warnw("access recheck failed; it runs again at the next interval", "owner", r.cfg.Owner, "error", err.Error())
	})
}

// Stats is what one pass did.
type Stats struct {
	Ran         bool // this server held the lease
	Checked     int  // provider answers that decided
	Revoked     int  // subscriptions that became REVOKED
	Verified    int  // subscriptions that became VERIFIED (were UNVERIFIED)
	Unavailable int  // checks without a usable answer (left as they were, tried next pass)
}

// RunOnce makes one pass if this server holds (or takes) the lease. The lease outlives two
// intervals, so its holder keeps it while it lives and another server takes over only after
// it stopped. Errors: a database failure (the pass stops; what it recorded stays).
func (r *Recheck) RunOnce(ctx context.Context) (Stats, error) {
	var st Stats
	if len(r.kinds) == 0 {
		return st, nil
	}
	mine, err := r.lease.AcquireSingleton(ctx, Singleton, r.cfg.Owner, 2*r.cfg.Interval)
	if err != nil || !mine {
		return st, err
	}
	st.Ran = true
	before := r.clock.Now()
	var cursor ports.AccessCursor
	for ctx.Err() == nil {
		due, err := r.store.DueAccessChecks(ctx, r.kinds, r.own, before, cursor, r.cfg.Batch)
		if err != nil {
			return st, fmt.Errorf("read due access checks: %w", err)
		}
		for start := 0; start < len(due); {
			end := start + 1
			for end < len(due) && due[end].ConnectionID == due[start].ConnectionID {
				end++
			}
			if err := r.connection(ctx, due[start:end], &st); err != nil {
				return st, err
			}
			start = end
		}
		if len(due) < r.cfg.Batch {
			break
		}
		last := due[len(due)-1]
		cursor = ports.AccessCursor{ConnectionID: last.ConnectionID, ResourceType: last.Resource.Type, ResourceID: last.Resource.ID}
	}
	if st.Checked > 0 || st.Unavailable > 0 {
		r.log.Infow("access recheck done", "owner", r.cfg.Owner, "checked", st.Checked, "revoked", st.Revoked,
			"verified", st.Verified, "unavailable", st.Unavailable)
	}
	return st, ctx.Err()
}

// connection checks one connection's due subscriptions with its credential (outside any
// transaction) and records the verdicts under its lifecycle lock.
func (r *Recheck) connection(ctx context.Context, checks []ports.AccessCheck, st *Stats) error {
	first := checks[0]
	checker, ok := r.checkers[first.Kind]
	if !ok {
		return nil
	}
	var credential []byte
	if _, own := checker.(contract.OwnCredential); !own {
		opened, err := r.secrets.Open(first.ConnectionID, first.SealedSecret)
		if err != nil {
			// The credentials key changed or the row was tampered with: an operator's problem;
			// the subscriptions keep their access until it is fixed.
			r.log.Errorw("access recheck cannot open a connection's secret", "connectionId", first.ConnectionID,
				"workspaceId", first.WorkspaceID)
			return nil
		}
		credential = opened
		defer clear(credential)
	}
	target := contract.AccessTarget{WorkspaceID: first.WorkspaceID, ConnectionID: first.ConnectionID, Credential: credential}
	var verdicts []ports.AccessVerdict
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CheckTimeout)
		_, err := checker.CheckAccess(cctx, target, c.Resource)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v := ports.AccessVerdict{Check: c, Access: connection.Verified, CheckedAt: r.clock.Now()}
		var rej *ports.RejectedError
		switch {
		case err == nil:
		case errors.Is(err, contract.ErrUnverifiable):
			// This server cannot ask (no API root or App key): no verdict, as for no answer.
			st.Unavailable++
			continue
		case errors.As(err, &rej) && errors.Is(err, ports.ErrForbidden):
			v.Access, v.Reason = connection.Revoked, rej.Detail
		default:
			st.Unavailable++
			r.log.Warnw("access recheck got no answer; the subscription keeps its access", "connectionId", c.ConnectionID,
				"workspaceId", c.WorkspaceID, "resourceType", c.Resource.Type, "resourceId", c.Resource.ID, "error", err.Error())
			continue
		}
		st.Checked++
		verdicts = append(verdicts, v)
	}
	if len(verdicts) == 0 {
		return nil
	}
	if _, err := r.store.RecordAccess(ctx, first.WorkspaceID, first.ConnectionID, verdicts); err != nil {
		return err
	}
	for _, v := range verdicts {
		switch {
		case v.Access == connection.Revoked && v.Check.Access != connection.Revoked:
			st.Revoked++
			r.log.Infow("subscription access revoked", "connectionId", v.Check.ConnectionID, "workspaceId", v.Check.WorkspaceID,
				"resourceType", v.Check.Resource.Type, "resourceId", v.Check.Resource.ID, "reason", v.Reason)
		case v.Access == connection.Verified && v.Check.Access == connection.Unverified:
			st.Verified++
		}
	}
	return nil
}
