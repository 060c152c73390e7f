// Package replays holds bulk replay (issue 35 point 3, CONTRACT.md "Operator API"): the
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

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Service runs the bulk replay use cases. It is safe for concurrent use.
type Service struct {
	store ports.ReplayJobStore
	wake  ports.Notifier
}

// NewService builds the service; wake tells this server's runner that a job started.
func NewService(store ports.ReplayJobStore, wake ports.Notifier) (*Service, error) {
	if store == nil || wake == nil {
		return nil, errors.New("replays: store and runner wake are required")
	}
	return &Service{store: store, wake: wake}, nil
}

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
func (s *Service) Start(ctx context.Context, m management.Managed, filter replayjob.Filter) (ports.ReplayJob, error) {
	j, err := s.store.StartReplay(ctx, m.Workspace().ID, filter, m.Principal().AccountID)
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
