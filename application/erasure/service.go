// Package erasure holds the use cases of person erasure of the two inbox stores (workspace rows
// and installation rows): preview, start, progress and resume for the instance administrator,
// and the Runner that works RUNNING requests pass by pass.
//
// The inbox is a live-predicate erasure store: a pass deletes what the frozen identity scope
// matches at that moment plus the rows whose keys were frozen at start, so preview counts may
// change without invalidating the scope, and a resume repeats the passes even after DONE.
package erasure

import (
	"context"
	"errors"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ReasonInvalidErasure is the 400 code of a request the domain refuses.
const ReasonInvalidErasure = "invalid-erasure"

// Identity is one requested account of the person: its provider id, its login, or both.
type Identity struct {
	ID    string
	Login string
}

// Request is a preview or start request as the API receives it.
type Request struct {
	Provider        string // "GITHUB", "GITLAB", "SLACK", "OUTLINE", …
	SourceServerURL string // the registered source namespace, e.g. https://github.com
	Identities      []Identity
}

// Service runs the erasure use cases. It is safe for concurrent use.
type Service struct {
	store  ports.ErasureStore
	runner ports.Notifier
}

// New builds the service; runner is woken when a request is started or resumed (the Runner).
func New(store ports.ErasureStore, runner ports.Notifier) (*Service, error) {
	if store == nil || runner == nil {
		return nil, errors.New("erasure: store and runner are required")
	}
	return &Service{store: store, runner: runner}, nil
}

// Preview counts the current matches of each inbox store for req, deleting nothing.
// Errors: ports.ErrForbidden; ports.ErrMalformed (reason invalid-erasure).
func (s *Service) Preview(ctx context.Context, p ports.Principal, req Request) ([]ports.ErasureMatches, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return nil, err
	}
	scope, err := scopeOf(req)
	if err != nil {
		return nil, err
	}
	m, err := s.store.Preview(ctx, scope)
	if err != nil {
		return nil, invalid(fmt.Errorf("preview erasure: %w", err))
	}
	return m, nil
}

// Start stores a RUNNING request with its frozen scope and keys and wakes the runner; the
// passes run in the background. Errors: ports.ErrForbidden; ports.ErrMalformed.
func (s *Service) Start(ctx context.Context, p ports.Principal, req Request) (erasure.Request, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return erasure.Request{}, err
	}
	scope, err := scopeOf(req)
	if err != nil {
		return erasure.Request{}, err
	}
	r, err := s.store.Start(ctx, scope, p.AccountID)
	if err != nil {
		return erasure.Request{}, invalid(fmt.Errorf("start erasure: %w", err))
	}
	s.runner.Notify()
	return r, nil
}

// Erasure reads a request's progress and receipts. Errors: ports.ErrForbidden,
// ports.ErrNotFound.
func (s *Service) Erasure(ctx context.Context, p ports.Principal, id int64) (erasure.Request, []erasure.Receipt, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return erasure.Request{}, nil, err
	}
	if id <= 0 {
		return erasure.Request{}, nil, fmt.Errorf("erasure %d: %w", id, ports.ErrNotFound)
	}
	r, receipts, err := s.store.Erasure(ctx, id)
	if err != nil {
		return erasure.Request{}, nil, fmt.Errorf("read erasure: %w", err)
	}
	return r, receipts, nil
}

// Resume asks for one more pass over both stores, also after DONE or FAILED, and wakes the
// runner. It waits while a runner works the request. Errors: ports.ErrForbidden,
// ports.ErrNotFound.
func (s *Service) Resume(ctx context.Context, p ports.Principal, id int64) (erasure.Request, error) {
	if err := requireInstanceAdmin(p); err != nil {
		return erasure.Request{}, err
	}
	if id <= 0 {
		return erasure.Request{}, fmt.Errorf("erasure %d: %w", id, ports.ErrNotFound)
	}
	r, err := s.store.Resume(ctx, id)
	if err != nil {
		return erasure.Request{}, fmt.Errorf("resume erasure: %w", err)
	}
	s.runner.Notify()
	return r, nil
}

// scopeOf validates a request into the domain's scope. The refusal names the rule, never an
// identity value.
func scopeOf(req Request) (erasure.Scope, error) {
	p, err := provider.New(req.Provider)
	if err != nil {
		return erasure.Scope{}, ports.Reject(ports.ErrMalformed, ReasonInvalidErasure, "provider")
	}
	ids := make([]erasure.Identity, 0, len(req.Identities))
	for _, i := range req.Identities {
		id, err := erasure.NewIdentity(i.ID, i.Login)
		if err != nil {
			return erasure.Scope{}, ports.Reject(ports.ErrMalformed, ReasonInvalidErasure, "identity")
		}
		ids = append(ids, id)
	}
	scope, err := erasure.NewScope(p, req.SourceServerURL, ids)
	if err != nil {
		return erasure.Scope{}, ports.Reject(ports.ErrMalformed, ReasonInvalidErasure, "scope")
	}
	return scope, nil
}

// invalid turns the domain's refusal of a grown scope into the 400 of the API.
func invalid(err error) error {
	if errors.Is(err, erasure.ErrInvalidRequest) {
		return ports.Reject(ports.ErrMalformed, ReasonInvalidErasure, "scope too large")
	}
	return err
}

func requireInstanceAdmin(p ports.Principal) error {
	if !p.InstanceAdmin {
		return fmt.Errorf("account %d is no instance administrator: %w", p.AccountID, ports.ErrForbidden)
	}
	return nil
}
