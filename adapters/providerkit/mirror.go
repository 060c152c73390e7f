package providerkit

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// FeedMirror is a provider's mirror store as its module wires it: it publishes its writes to
// the change feed, shaped by the read API's views V (mirrorkit.Feed).
type FeedMirror[V any] interface {
	PublishChanges(pub ports.ChangePublisher, views V) error
}

// stateMirror is a mirror store whose handlers move connections through their states.
type stateMirror interface {
	PublishConnectionStates(p mirrorkit.ConnectionStatePublisher) error
}

// NewMirror makes a module's mirror store on deps.Pool with newStore, publishing to deps.Changes
// shaped by views and, when the store moves connections through their states, publishing those
// through deps.Connections. Errors: newStore's, a missing publisher.
func NewMirror[S FeedMirror[V], V any](deps Deps, newStore func(*pgxpool.Pool) (S, error), views V) (S, error) {
	store, err := newStore(deps.Pool)
	if err != nil {
		return store, err
	}
	if s, ok := any(store).(stateMirror); ok {
		if err := s.PublishConnectionStates(deps.Connections); err != nil {
			return store, err
		}
	}
	return store, store.PublishChanges(deps.Changes, views)
}
