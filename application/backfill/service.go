package backfill

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Progress is a connection's sync as the API shows it.
type Progress struct {
	// State is IDLE (no job), RUNNING, DONE or FAILED (rules.Overall).
	State     string
	Resources []ports.SyncResourceProgress
}

// Service starts and reads a connection's backfills; the caller has authorised the workspace.
type Service struct {
	store ports.SyncProgressStore
	wake  func()
}

// NewService makes the service; wake (may be nil) wakes this server's runner after a restart.
func NewService(store ports.SyncProgressStore, wake func()) (*Service, error) {
	if store == nil {
		return nil, fmt.Errorf("backfill: a progress store is required")
	}
	if wake == nil {
		wake = func() {}
	}
	return &Service{store: store, wake: wake}, nil
}

// Restart starts every backfill of the connection again and answers its progress.
// Errors: ports.ErrNotFound, ports.ErrConflict ("connection-not-active").
func (s *Service) Restart(ctx context.Context, workspaceID, connectionID int64) (Progress, error) {
	if err := s.store.RestartSync(ctx, workspaceID, connectionID); err != nil {
		return Progress{}, fmt.Errorf("restart sync of connection %d: %w", connectionID, err)
	}
	s.wake()
	return s.Progress(ctx, workspaceID, connectionID)
}

// Progress reads the connection's jobs. Errors: ports.ErrNotFound.
func (s *Service) Progress(ctx context.Context, workspaceID, connectionID int64) (Progress, error) {
	rs, err := s.store.SyncProgress(ctx, workspaceID, connectionID)
	if err != nil {
		return Progress{}, fmt.Errorf("sync progress of connection %d: %w", connectionID, err)
	}
	states := make([]syncjob.State, len(rs))
	for i, r := range rs {
		states[i] = r.State
	}
	return Progress{State: syncjob.Overall(states), Resources: rs}, nil
}

// ConnectionState is one connection's overall sync state in a workspace's overview.
type ConnectionState struct {
	ConnectionID int64
	Provider     string
	// State is RUNNING, DONE or FAILED (syncjob.Overall of its jobs).
	State string
}

// Overview lists the workspace's connections that have backfills, by connection id, with
// their overall states; a connection without jobs (IDLE) is not listed.
func (s *Service) Overview(ctx context.Context, workspaceID int64) ([]ConnectionState, error) {
	cs, err := s.store.WorkspaceSyncs(ctx, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("sync overview of workspace %d: %w", workspaceID, err)
	}
	out := make([]ConnectionState, len(cs))
	for i, c := range cs {
		out[i] = ConnectionState{ConnectionID: c.ConnectionID, Provider: c.Provider, State: syncjob.Overall(c.States)}
	}
	return out, nil
}
