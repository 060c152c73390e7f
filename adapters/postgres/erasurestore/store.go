// Package erasure implements ports.ErasureStore on PostgreSQL: person erasure of the providers'
// mirror stores (each a contract.PersonDataStore declared by its provider) and then of the two
// inbox stores (workspace rows and installation rows of provider_event), under the copy fence
// of migration 00003, with the requests, frozen keys and receipts of migrations 00004 and 00021.
package erasurestore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Store is the PostgreSQL erasure store. It is safe for concurrent use. A runner's Hold keeps
// one pooled connection while its passes use others, so the pool needs at least two.
type Store struct {
	pool          *pgxpool.Pool
	matchers      map[string]matcher
	fields        map[string]contract.PersonFields
	mirrors       map[string][]contract.PersonDataStore
	installations map[string]string
}

var _ ports.ErasureStore = (*Store)(nil)

// Config is what the providers declare to person erasure, collected by bootstrap.
type Config struct {
	// Fields says, per provider, where its payloads name a person (the inbox stores).
	Fields []contract.PersonFields
	// Mirrors are the providers' mirror stores, run in this order before the inbox stores.
	Mirrors []contract.PersonDataStore
	// InstallationNamespaces is, per provider name, the source namespace admission stores on
	// installation rows that no connection names yet (GitHub: https://github.com).
	InstallationNamespaces map[string]string
}

// New returns a store on pool. A provider without declared person fields has nothing this
// store can match: its requests are refused as of an unknown source.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("erasure: pool is required")
	}
	if pool.Config().MaxConns < 2 {
		return nil, errors.New("erasure: the pool needs at least two connections (a held request and its pass)")
	}
	s := &Store{pool: pool, matchers: map[string]matcher{}, fields: map[string]contract.PersonFields{}, mirrors: map[string][]contract.PersonDataStore{},
		installations: map[string]string{}}
	for _, f := range cfg.Fields {
		if _, dup := s.matchers[f.Provider.String()]; dup {
			return nil, fmt.Errorf("erasure: person fields of %s declared twice", f.Provider)
		}
		m, err := newMatcher(f)
		if err != nil {
			return nil, fmt.Errorf("erasure: %w", err)
		}
		if err := checkTextRewrites(f); err != nil {
			return nil, fmt.Errorf("erasure: %w", err)
		}
		s.matchers[f.Provider.String()] = m
		s.fields[f.Provider.String()] = f
	}
	for _, m := range cfg.Mirrors {
		if m == nil || m.Provider().IsZero() {
			return nil, errors.New("erasure: a mirror store without a provider")
		}
		s.mirrors[m.Provider().String()] = append(s.mirrors[m.Provider().String()], m)
	}
	for p, u := range cfg.InstallationNamespaces {
		s.installations[p] = u
	}
	return s, nil
}

// Mirrors implements ports.ErasureStore: one mirror store per provider, named for it, then the
// change feed of every provider that declared person fields.
func (s *Store) Mirrors(p provider.Provider) []erasure.Store {
	var out []erasure.Store
	if len(s.mirrors[p.String()]) > 0 {
		out = append(out, erasure.MirrorStore(p))
	}
	if _, ok := s.matchers[p.String()]; ok {
		out = append(out, erasure.ChangeFeed)
	}
	return out
}

// feedTypePrefix is the type prefix of provider p's changes in the feed ("github.", …).
func feedTypePrefix(p provider.Provider) string { return strings.ToLower(p.String()) + "." }

// matcherOf is the SQL of the scope's provider. Errors: erasure.ErrUnknownSource when the
// provider declared no person fields.
func (s *Store) matcherOf(p provider.Provider) (matcher, error) {
	m, ok := s.matchers[p.String()]
	if !ok {
		return matcher{}, fmt.Errorf("%w: no person fields declared for the provider", erasure.ErrUnknownSource)
	}
	return m, nil
}

// checkNamespace refuses a scope whose namespace this instance does not have.
func (s *Store) checkNamespace(ctx context.Context, q pgx.Tx, scope erasure.Scope) error {
	var known bool
	if err := q.QueryRow(ctx, knownNamespace, scope.Provider().String(), scope.SourceServerURL(),
		s.installations[scope.Provider().String()]).Scan(&known); err != nil {
		return sqlkit.Interpret("check erasure namespace", err)
	}
	if !known {
		return fmt.Errorf("%w: no connection of the provider has this source", erasure.ErrUnknownSource)
	}
	return nil
}

// workspacesOf lists the workspaces whose mirror belongs to the scope's namespace.
func workspacesOf(ctx context.Context, q pgx.Tx, scope erasure.Scope) ([]int64, error) {
	var ws []int64
	err := q.QueryRow(ctx, namespaceWorkspaces, scope.Provider().String(), scope.SourceServerURL()).Scan(&ws)
	return ws, sqlkit.Interpret("list erasure workspaces", err)
}

// The isolation of the store's transactions: readCommitted for what writes, readSnapshot for
// the reads whose parts must describe one moment.
var (
	readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	readSnapshot  = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
)
