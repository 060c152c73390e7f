// Package replays holds bulk replay (the Operator API): the
// operators' use cases (dry run, start, progress, cancel) and the runner that works the durable
// jobs in batches with the single replay's rules.
//
// Reading manages nothing, so a workspace's jobs and the dry-run count are open to its members
// (the inbound adapter authorised the ports.Workspace it hands in); starting and cancelling
// take a management.Managed, which only management.Service.Manage makes for the workspace's
// ADMIN or the instance administrator, so they cannot run unchecked.
package replays

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Default limits of ServiceConfig (CONTRACT.md: HEPHAESTUS_REPLAY_MAX_RUNNING and
// HEPHAESTUS_REPLAY_MAX_ROWS).
const (
	DefaultMaxRunning = 2
	DefaultMaxRows    = 100000
)

// ServiceConfig configures the use cases.
type ServiceConfig struct {
	// Providers are the providers this server runs: the only names a filter's provider may be
	// (required).
	Providers []provider.Provider
	// MaxRunning is the most RUNNING jobs of one workspace (default DefaultMaxRunning); a start
	// past it is refused (replayjob.LimitRunning).
	MaxRunning int64
	// MaxRows is the most rows one job may match (default DefaultMaxRows); a start whose filter
	// matches more is refused, not truncated (replayjob.LimitRows).
	MaxRows int64
}

func (c *ServiceConfig) setDefaults() {
	if c.MaxRunning == 0 {
		c.MaxRunning = DefaultMaxRunning
	}
	if c.MaxRows == 0 {
		c.MaxRows = DefaultMaxRows
	}
}

// Service runs the bulk replay use cases. It is safe for concurrent use.
type Service struct {
	providers []provider.Provider
	limits    replayjob.Limits
	store     ports.ReplayJobStore
	wake      ports.Notifier
}

// NewService validates cfg and builds the service; wake tells this server's runner that a job
// started.
func NewService(cfg ServiceConfig, store ports.ReplayJobStore, wake ports.Notifier) (*Service, error) {
	cfg.setDefaults()
	limits, err := replayjob.NewLimits(cfg.MaxRunning, cfg.MaxRows)
	if err != nil {
		return nil, err
	}
	if len(cfg.Providers) == 0 {
		return nil, errors.New("replays: the providers a filter may name are required")
	}
	if store == nil || wake == nil {
		return nil, errors.New("replays: store and runner wake are required")
	}
	return &Service{providers: slices.Clone(cfg.Providers), limits: limits, store: store, wake: wake}, nil
}

// Filter validates a filter as given (replayjob.NewFilter with the providers this server
// runs). Errors: *replayjob.FieldError naming the refused field.
func (s *Service) Filter(fields replayjob.FilterFields) (replayjob.Filter, error) {
	return replayjob.NewFilter(fields, s.providers)
}

// Providers are the providers a filter may name.
func (s *Service) Providers() []provider.Provider { return slices.Clone(s.providers) }

// Limits are the per-workspace limits every start is checked against.
func (s *Service) Limits() replayjob.Limits { return s.limits }

// Count is the dry run: how many DEAD rows of workspace ws filter matches now, the rows a job
// started now would replay.
func (s *Service) Count(ctx context.Context, ws ports.Workspace, filter replayjob.Filter) (int64, error) {
	if ws.ID <= 0 {
		return 0, fmt.Errorf("count replayable rows: %w", ports.ErrNotFound)
	}
	n, err := s.store.CountReplayable(ctx, ws.ID, filter)
	if err != nil {
		return 0, fmt.Errorf("count replayable rows: %w", err)
	}
	return n, nil
}

// Start starts a job for the managed workspace's DEAD rows that filter matches now, requested
// by the caller, whom every replayed row records. A job that matches nothing is DONE at once.
// Errors: *replayjob.LimitError (replayjob.ErrLimit) when the workspace already runs
// MaxRunning jobs or filter matches more than MaxRows rows; nothing is started.
func (s *Service) Start(ctx context.Context, m management.Managed, filter replayjob.Filter) (ports.ReplayJob, error) {
	j, err := s.store.StartReplay(ctx, m.Workspace().ID, filter, m.Principal().AccountID, s.limits)
	if err != nil {
		return ports.ReplayJob{}, fmt.Errorf("start replay: %w", err)
	}
	if j.State == replayjob.Running {
		s.wake.Notify()
	}
	return j, nil
}

// List pages workspace ws's jobs, newest first.
func (s *Service) List(ctx context.Context, ws ports.Workspace, page ports.PageRequest) ([]ports.ReplayJob, int, error) {
	if ws.ID <= 0 {
		return nil, 0, fmt.Errorf("list replay jobs: %w", ports.ErrNotFound)
	}
	jobs, total, err := s.store.ListReplayJobs(ctx, ws.ID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list replay jobs: %w", err)
	}
	return jobs, total, nil
}

// Job reads one job of workspace ws. Errors: ports.ErrNotFound (a job of another workspace
// included).
func (s *Service) Job(ctx context.Context, ws ports.Workspace, id int64) (ports.ReplayJob, error) {
	if ws.ID <= 0 || id <= 0 {
		return ports.ReplayJob{}, fmt.Errorf("replay job %d: %w", id, ports.ErrNotFound)
	}
	return s.store.ReplayJob(ctx, ws.ID, id)
}

// Cancel stops a RUNNING job of the managed workspace after its batch in flight and returns it
// CANCELLED with its final counts. Errors: ports.ErrNotFound; ports.ErrConflict "not-running".
func (s *Service) Cancel(ctx context.Context, m management.Managed, id int64) (ports.ReplayJob, error) {
	if id <= 0 {
		return ports.ReplayJob{}, fmt.Errorf("replay job %d: %w", id, ports.ErrNotFound)
	}
	return s.store.CancelReplay(ctx, m.Workspace().ID, id)
}
