// Package erasure holds the use cases of person erasure: preview, start, progress and resume
// for the instance administrator, and the Runner that works RUNNING requests pass by pass over
// every store that can hold the person: the provider's mirror stores (the ordinary source
// erasure), then the two inbox stores (workspace rows and installation rows).
//
// Every store is a live-predicate erasure store: a pass erases what the frozen identity scope
// matches at that moment (in the inbox also the rows whose keys were frozen at start), so
// preview counts may change without invalidating the scope, and a resume repeats the passes
// even after DONE.
package personerasure

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

// ReasonUnknownSource is the 422 code of a request whose sourceServerUrl names no namespace
// this instance has; nothing is started.
const ReasonUnknownSource = "unknown-source"

// Identity is one requested account of the person: its provider id, login, e-mail address.
type Identity struct {
	ID    string
	Login string
	Email string
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
// Errors: ports.ErrForbidden; ports.ErrMalformed (reason invalid-erasure);
// ports.ErrUnprocessable (reason unknown-source).
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
// passes run in the background. Errors: ports.ErrForbidden; ports.ErrMalformed;
// ports.ErrUnprocessable (reason unknown-source: nothing was started).
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
		id, err := erasure.NewIdentity(i.ID, i.Login, i.Email)
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

// invalid turns the store's refusal of a namespace into the 422 of the API, and the domain's
// refusal of a grown scope into its 400.
func invalid(err error) error {
	if errors.Is(err, erasure.ErrUnknownSource) {
		return ports.Reject(ports.ErrUnprocessable, ReasonUnknownSource, "")
	}
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
