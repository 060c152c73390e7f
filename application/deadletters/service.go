// Package deadletters holds the operators' use cases of the inbox: listing and inspecting DEAD
// rows, replaying them, and a workspace's inbox at a glance.
//
// Workspace use cases take a management.Managed, which only management.Service.Manage makes
// after checking that the caller is the workspace's ADMIN or the instance administrator, so no
// use case here can run unchecked; every read and the replay bind that workspace. Installation
// rows (NULL workspace) are the instance administrator's alone.
package deadletters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/deliveries"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// BusiestScopes is how many scopes the inbox overview lists.
const BusiestScopes = 10

// installation is the workspace id the ports use for installation rows.
const installation int64 = 0

// Service runs the dead-letter use cases. It is safe for concurrent use.
type Service struct {
	reader ports.DeadLetterReader
	inbox  ports.InboxStore
	wake   ports.Notifier
	// providers are the server's providers: what a list filter's provider may name.
	providers provider.Set
}

// New builds the service. inbox performs replays (with the installation audit in the replay
// transaction); wake tells this server's claimers that a replayed row is QUEUED again.
// providers are the server's providers, the values a list filter's provider may name.
func New(reader ports.DeadLetterReader, inbox ports.InboxStore, wake ports.Notifier, providers provider.Set) (*Service, error) {
	if reader == nil || inbox == nil || wake == nil {
		return nil, errors.New("deadletters: reader, inbox store and notifier are required")
	}
	return &Service{reader: reader, inbox: inbox, wake: wake, providers: providers}, nil
}

// Replayed is the outcome of a replay.
type Replayed struct {
	ID         int64
	State      inbox.State
	ReplayedBy int64 // the replaying account; 0 when ByAdminToken
	// ByAdminToken: the configured instance administrator token replayed it, which is no
	// account, so it is shown and stored as its own principal, never as an account id.
	ByAdminToken bool
	ReplayedAt   time.Time
}

// List pages the managed workspace's DEAD rows that match filter, newest first.
func (s *Service) List(ctx context.Context, m management.Managed, filter ports.DeadLetterFilter, page ports.PageRequest) ([]inbox.Delivery, int, error) {
	return s.list(ctx, m.Workspace().ID, filter, page)
}

// DeadLetter reads one DEAD row of the managed workspace with its payload and headers.
// Errors: ports.ErrNotFound (no such DEAD row in the workspace).
func (s *Service) DeadLetter(ctx context.Context, m management.Managed, id int64) (ports.DeadLetter, error) {
	return s.deadLetter(ctx, m.Workspace().ID, id)
}

// Replay sets a DEAD row of the managed workspace back to QUEUED, recording the caller.
// Errors: ports.ErrNotFound; ports.ErrConflict with reason "not-dead" when the row is not DEAD
// (also for the loser of two concurrent replays).
func (s *Service) Replay(ctx context.Context, m management.Managed, id int64) (Replayed, error) {
	return s.replay(ctx, m.Workspace().ID, id, m.Principal())
}

// Inbox is the managed workspace's inbox at a glance.
func (s *Service) Inbox(ctx context.Context, m management.Managed) (ports.InboxOverview, error) {
	o, err := s.reader.Overview(ctx, m.Workspace().ID, BusiestScopes)
	if err != nil {
		return ports.InboxOverview{}, fmt.Errorf("inbox overview: %w", err)
	}
	return o, nil
}

// ActivityLimit bounds the rows the activity chart counts: past it the chart shows a lower
// bound (Activity.Capped) rather than scan an hour of a busy instance.
const ActivityLimit = 100_000

// Activity is the managed workspace's handled and failed rows per minute over the last hour.
func (s *Service) Activity(ctx context.Context, m management.Managed) (ports.Activity, error) {
	a, err := s.reader.Activity(ctx, m.Workspace().ID, ActivityLimit)
	if err != nil {
		return ports.Activity{}, fmt.Errorf("inbox activity: %w", err)
	}
	return a, nil
}

// ListInstallation pages the installation's DEAD rows. Errors: ports.ErrForbidden unless p is
// the instance administrator.
func (s *Service) ListInstallation(ctx context.Context, p ports.Principal, filter ports.DeadLetterFilter, page ports.PageRequest) ([]inbox.Delivery, int, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return nil, 0, err
	}
	return s.list(ctx, installation, filter, page)
}

// InstallationDeadLetter reads one DEAD installation row. Errors: ports.ErrForbidden,
// ports.ErrNotFound.
func (s *Service) InstallationDeadLetter(ctx context.Context, p ports.Principal, id int64) (ports.DeadLetter, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return ports.DeadLetter{}, err
	}
	return s.deadLetter(ctx, installation, id)
}

// ReplayInstallation replays a DEAD installation row; its audit record commits in the replay
// transaction. Errors: ports.ErrForbidden, and those of Replay.
func (s *Service) ReplayInstallation(ctx context.Context, p ports.Principal, id int64) (Replayed, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return Replayed{}, err
	}
	return s.replay(ctx, installation, id, p)
}

func (s *Service) list(ctx context.Context, workspaceID int64, filter ports.DeadLetterFilter, page ports.PageRequest) ([]inbox.Delivery, int, error) {
	if err := deliveries.CheckFilter(s.providers, filter.Provider, filter.ErrorClass); err != nil {
		return nil, 0, fmt.Errorf("list dead letters: %w", err)
	}
	items, total, err := s.reader.ListDead(ctx, workspaceID, filter, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list dead letters: %w", err)
	}
	return items, total, nil
}

func (s *Service) deadLetter(ctx context.Context, workspaceID, id int64) (ports.DeadLetter, error) {
	if id <= 0 {
		return ports.DeadLetter{}, fmt.Errorf("dead letter %d: %w", id, ports.ErrNotFound)
	}
	d, err := s.reader.DeadLetter(ctx, workspaceID, id)
	if err != nil {
		return ports.DeadLetter{}, fmt.Errorf("read dead letter: %w", err)
	}
	return d, nil
}

func (s *Service) replay(ctx context.Context, workspaceID, id int64, by ports.Principal) (Replayed, error) {
	if id <= 0 {
		return Replayed{}, fmt.Errorf("replay %d: %w", id, ports.ErrNotFound)
	}
	d, err := s.inbox.Replay(ctx, workspaceID, id, by.AccountID)
	if err != nil {
		return Replayed{}, fmt.Errorf("replay dead letter: %w", err)
	}
	// The replay committed: this server's claimers look now; other servers find the row at
	// their next poll.
	s.wake.Notify()
	return Replayed{ID: d.ID(), State: d.State(), ReplayedBy: d.ReplayedBy(),
		ByAdminToken: d.ReplayedBy() == ports.InstanceAdminAccountID, ReplayedAt: d.ReplayedAt()}, nil
}

func requireInstanceAdmin(p ports.Principal) error {
	if !p.InstanceAdmin {
		return fmt.Errorf("account %d is no instance administrator: %w", p.AccountID, ports.ErrForbidden)
	}
	return nil
}
