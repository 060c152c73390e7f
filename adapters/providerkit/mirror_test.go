package providerkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type views struct{ name string }

// feedStore records how a module wired it; stateStore also moves connections through their
// states, as GitHub's and Slack's mirrors do.
type feedStore struct {
	pub   ports.ChangePublisher
	views views
}

func (s *feedStore) PublishChanges(pub ports.ChangePublisher, v views) error {
	if pub == nil {
		return errors.New("nil publisher")
	}
	s.pub, s.views = pub, v
	return nil
}

type stateStore struct {
	feedStore
	states mirrorkit.ConnectionStatePublisher
}

func (s *stateStore) PublishConnectionStates(p mirrorkit.ConnectionStatePublisher) error {
	if p == nil {
		return errors.New("nil connection state publisher")
	}
	s.states = p
	return nil
}

type publisher struct{ ports.ChangePublisher }

type states struct{}

func (states) PublishConnectionState(context.Context, ports.Tx, int64, int64) error { return nil }

func TestNewMirrorWiresTheFeedAndTheConnectionStates(t *testing.T) {
	deps := providerkit.Deps{Changes: publisher{}, Connections: states{}}
	s, err := providerkit.NewMirror(deps, func(*pgxpool.Pool) (*stateStore, error) { return &stateStore{}, nil }, views{"read"})
	if err != nil || s.pub == nil || s.views.name != "read" || s.states == nil {
		t.Fatalf("NewMirror = %+v, %v; want the feed shaped by the views and the connection states wired", s, err)
	}
	f, err := providerkit.NewMirror(deps, func(*pgxpool.Pool) (*feedStore, error) { return &feedStore{}, nil }, views{"read"})
	if err != nil || f.pub == nil {
		t.Fatalf("NewMirror = %+v, %v; want the feed wired", f, err)
	}
	deps.Connections = nil
	if _, err := providerkit.NewMirror(deps, func(*pgxpool.Pool) (*stateStore, error) { return &stateStore{}, nil }, views{}); err == nil {
		t.Fatal("NewMirror wired a store that moves connection states without a publisher of them")
	}
	failed := errors.New("no pool")
	if _, err := providerkit.NewMirror(deps, func(*pgxpool.Pool) (*feedStore, error) { return nil, failed }, views{}); !errors.Is(err, failed) {
		t.Fatalf("NewMirror = %v, want the store's error", err)
	}
}
