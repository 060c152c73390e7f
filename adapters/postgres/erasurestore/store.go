// Package erasure implements ports.ErasureStore on PostgreSQL: person erasure of the providers'
// mirror stores (each a ports.PersonDataStore declared by its provider) and then of the two
// inbox stores (workspace rows and installation rows of provider_event), under the copy fence
// of migration 00003, with the requests, frozen keys and receipts of migrations 00004 and 00021.
package erasurestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// discoveryRounds bounds how often start looks for id↔login pairs with the pairs it found
// (a login found by id can name older payloads that carry yet another id, and so on).
const discoveryRounds = 4

// cleanupTimeout bounds the lowering of the fence after a failed or cancelled pass.
const cleanupTimeout = 5 * time.Second

// Store is the PostgreSQL erasure store. It is safe for concurrent use. A runner's Hold keeps
// one pooled connection while its passes use others, so the pool needs at least two.
type Store struct {
	pool          *pgxpool.Pool
	matchers      map[string]matcher
	fields        map[string]ports.PersonFields
	mirrors       map[string][]ports.PersonDataStore
	installations map[string]string
}

var _ ports.ErasureStore = (*Store)(nil)

// Config is what the providers declare to person erasure, collected by bootstrap.
type Config struct {
	// Fields says, per provider, where its payloads name a person (the inbox stores).
	Fields []ports.PersonFields
	// Mirrors are the providers' mirror stores, run in this order before the inbox stores.
	Mirrors []ports.PersonDataStore
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
	s := &Store{pool: pool, matchers: map[string]matcher{}, fields: map[string]ports.PersonFields{}, mirrors: map[string][]ports.PersonDataStore{},
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

var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// identityJSON is the stored form of one identity of a frozen scope.
type identityJSON struct {
	ID    string `json:"id,omitempty"`
	Login string `json:"login,omitempty"`
	Email string `json:"email,omitempty"`
}

func identitiesJSON(ids []erasure.Identity) ([]byte, error) {
	out := make([]identityJSON, len(ids))
	for i, id := range ids {
		out[i] = identityJSON{ID: id.ID(), Login: id.Login(), Email: id.Email()}
	}
	return json.Marshal(out)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// grow adds the id↔login pairs found in matching payloads until nothing new turns up.
func grow(ctx context.Context, q querier, m matcher, scope erasure.Scope) (erasure.Scope, error) {
	if m.discover == "" {
		return scope, nil // the provider's payloads carry no logins to pair
	}
	for round := 0; round < discoveryRounds; round++ {
		ids, err := identitiesJSON(scope.Identities())
		if err != nil {
			return erasure.Scope{}, err
		}
		rows, err := q.Query(ctx, m.discover, scope.Provider().String(), scope.SourceServerURL(), ids)
		if err != nil {
			return erasure.Scope{}, sqlkit.Interpret("find identity pairs", err)
		}
		pairs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (erasure.Identity, error) {
			var id, login string
			err := row.Scan(&id, &login)
			return erasure.RestoreIdentity(id, login, ""), err
		})
		if err != nil {
			return erasure.Scope{}, sqlkit.Interpret("find identity pairs", err)
		}
		grown, grew, err := scope.WithPairs(pairs)
		if err != nil {
			return erasure.Scope{}, err
		}
		scope = grown
		if !grew {
			break
		}
	}
	return scope, nil
}

// Preview implements ports.ErasureStore. One REPEATABLE READ snapshot, so the pairs found and
// the counts of every store describe the same moment.
func (s *Store) Preview(ctx context.Context, scope erasure.Scope) ([]ports.ErasureMatches, error) {
	m, err := s.matcherOf(scope.Provider())
	if err != nil {
		return nil, err
	}
	var out []ports.ErasureMatches
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(ctx context.Context, tx pgx.Tx) error {
			if err := s.checkNamespace(ctx, tx, scope); err != nil {
				return err
			}
			grown, err := grow(ctx, tx, m, scope)
			if err != nil {
				return err
			}
			ws, err := workspacesOf(ctx, tx, grown)
			if err != nil {
				return err
			}
			if mirrors := s.mirrors[scope.Provider().String()]; len(mirrors) > 0 {
				var n int64
				for _, mirror := range mirrors {
					c, err := mirror.CountPerson(ctx, sqlkit.Adopt(tx), ws, grown)
					if err != nil {
						return fmt.Errorf("count %s: %w", erasure.MirrorStore(scope.Provider()), err)
					}
					n += c
				}
				out = append(out, ports.ErasureMatches{Store: erasure.MirrorStore(scope.Provider()), Matches: n})
			}
			ids, err := identitiesJSON(grown.Identities())
			if err != nil {
				return err
			}
			var feedRows int64
			if err := tx.QueryRow(ctx, m.countFeed, ws, feedTypePrefix(grown.Provider()), ids, grown.Provider().String(), grown.SourceServerURL()).Scan(&feedRows); err != nil {
				return sqlkit.Interpret("count erasure matches in the change feed", err)
			}
			out = append(out, ports.ErasureMatches{Store: erasure.ChangeFeed, Matches: feedRows})
			var wsRows, instRows int64
			err = tx.QueryRow(ctx, m.preview, grown.Provider().String(), grown.SourceServerURL(), ids).Scan(&wsRows, &instRows)
			if err != nil {
				return sqlkit.Interpret("count erasure matches", err)
			}
			// The deliveries of others whose strings the inbox steps rewrite count too.
			f := s.fields[grown.Provider().String()]
			rw, err := newPayloadRewrite(f.Text, grown)
			if err != nil {
				return err
			}
			if len(rw.rules) > 0 {
				wsText, instText, err := countRewrites(ctx, tx, f, rw, grown, ids)
				if err != nil {
					return err
				}
				wsRows, instRows = wsRows+wsText, instRows+instText
			}
			out = append(out,
				ports.ErasureMatches{Store: erasure.WorkspaceInbox, Matches: wsRows},
				ports.ErasureMatches{Store: erasure.InstallationInbox, Matches: instRows})
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Start implements ports.ErasureStore: the request, its grown scope and its frozen keys commit
// together, so a request never exists without the keys it froze.
func (s *Store) Start(ctx context.Context, scope erasure.Scope, requestedBy int64) (erasure.Request, error) {
	m, err := s.matcherOf(scope.Provider())
	if err != nil {
		return erasure.Request{}, err
	}
	var req erasure.Request
	err = sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.checkNamespace(ctx, tx, scope); err != nil {
			return err
		}
		grown, err := grow(ctx, tx, m, scope)
		if err != nil {
			return err
		}
		ids, err := identitiesJSON(grown.Identities())
		if err != nil {
			return err
		}
		var (
			id        int64
			state     string
			passes    int32
			retries   int32
			createdAt time.Time
		)
		if err := tx.QueryRow(ctx, insertErasure, grown.Provider().String(), grown.SourceServerURL(), ids, requestedBy).
			Scan(&id, &state, &passes, &retries, &createdAt); err != nil {
			return sqlkit.Interpret("store erasure request", err)
		}
		if _, err := tx.Exec(ctx, m.freeze, id); err != nil {
			return sqlkit.Interpret("freeze erasure keys", err)
		}
		st, err := erasure.ParseState(state)
		if err != nil {
			return err
		}
		req = erasure.RestoreRequest(erasure.StoredRequest{
			ID: id, Scope: grown, State: st, Passes: int(passes), Retries: int(retries), RequestedBy: requestedBy, CreatedAt: createdAt,
		})
		return nil
	})
	if err != nil {
		return erasure.Request{}, err
	}
	return req, nil
}

// Erasure implements ports.ErasureStore.
func (s *Store) Erasure(ctx context.Context, id int64) (erasure.Request, []erasure.Receipt, error) {
	var (
		req      erasure.Request
		receipts []erasure.Receipt
	)
	err := sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(ctx context.Context, tx pgx.Tx) error {
			var err error
			if req, err = scanRequest(tx.QueryRow(ctx, selectErasure, id)); err != nil {
				return sqlkit.Interpret(fmt.Sprintf("read erasure %d", id), err)
			}
			receipts, err = readReceipts(ctx, tx, id)
			return err
		})
	if err != nil {
		return erasure.Request{}, nil, err
	}
	return req, receipts, nil
}

// Resume implements ports.ErasureStore.
func (s *Store) Resume(ctx context.Context, id int64) (erasure.Request, error) {
	var req erasure.Request
	err := sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if req, err = scanRequest(tx.QueryRow(ctx, lockErasureForResume, id)); err != nil {
			return sqlkit.Interpret(fmt.Sprintf("resume erasure %d", id), err)
		}
		req.Resume()
		_, err = tx.Exec(ctx, writeResume, id, req.Passes(), req.State().String(), req.Retries())
		return sqlkit.Interpret(fmt.Sprintf("resume erasure %d", id), err)
	})
	if err != nil {
		return erasure.Request{}, err
	}
	return req, nil
}

// errNoneFree ends Hold's transaction when no request is free; it never leaves Hold.
var errNoneFree = errors.New("no free running erasure")

// Hold implements ports.ErasureStore. The hold is a row lock of a READ COMMITTED transaction
// that stays open while work runs its passes on other connections.
func (s *Store) Hold(ctx context.Context, work func(ctx context.Context, r erasure.Request, receipts []erasure.Receipt) (erasure.Request, error)) (bool, error) {
	err := sqlkit.WithTx(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		req, err := scanRequest(tx.QueryRow(ctx, holdRunningErasure))
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoneFree
		}
		if err != nil {
			return sqlkit.Interpret("hold running erasure", err)
		}
		receipts, err := readReceipts(ctx, tx, req.ID())
		if err != nil {
			return err
		}
		settled, err := work(ctx, req, receipts)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, writeErasureState, req.ID(), settled.State().String(), settled.Passes(), settled.Retries(),
			settled.RetryDelay().Milliseconds())
		return sqlkit.Interpret(fmt.Sprintf("store state of erasure %d", req.ID()), err)
	})
	if errors.Is(err, errNoneFree) {
		return false, nil
	}
	return true, err
}

func scanScope(row pgx.Row) (erasure.Scope, error) {
	var (
		prov, url  string
		identities []identityJSON
	)
	if err := row.Scan(&prov, &url, &identities); err != nil {
		return erasure.Scope{}, err
	}
	ids := make([]erasure.Identity, len(identities))
	for i, v := range identities {
		ids[i] = erasure.RestoreIdentity(v.ID, v.Login, v.Email)
	}
	return erasure.RestoreScope(provider.Restore(prov), url, ids), nil
}

func scanRequest(row pgx.Row) (erasure.Request, error) {
	var (
		id, requestedBy int64
		prov, url       string
		state           string
		identities      []identityJSON
		passes, retries int32
		createdAt       time.Time
	)
	if err := row.Scan(&id, &prov, &url, &identities, &state, &passes, &retries, &requestedBy, &createdAt); err != nil {
		return erasure.Request{}, err
	}
	st, err := erasure.ParseState(state)
	if err != nil {
		return erasure.Request{}, err
	}
	ids := make([]erasure.Identity, len(identities))
	for i, v := range identities {
		ids[i] = erasure.RestoreIdentity(v.ID, v.Login, v.Email)
	}
	return erasure.RestoreRequest(erasure.StoredRequest{
		ID: id, Scope: erasure.RestoreScope(provider.Restore(prov), url, ids), State: st,
		Passes: int(passes), Retries: int(retries), RequestedBy: requestedBy, CreatedAt: createdAt,
	}), nil
}

func readReceipts(ctx context.Context, tx pgx.Tx, id int64) ([]erasure.Receipt, error) {
	rows, err := tx.Query(ctx, selectReceipts, id)
	if err != nil {
		return nil, sqlkit.Interpret("read erasure receipts", err)
	}
	receipts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (erasure.Receipt, error) {
		var (
			rc    erasure.Receipt
			store string
			pass  int32
		)
		if err := row.Scan(&store, &pass, &rc.Deleted, &rc.Boundary, &rc.At, &rc.FailedRows); err != nil {
			return erasure.Receipt{}, err
		}
		st, err := erasure.ParseStore(store)
		if err != nil {
			return erasure.Receipt{}, err
		}
		rc.Store, rc.Pass = st, int(pass)
		if len(rc.FailedRows) == 0 {
			rc.FailedRows = nil
		}
		return rc, nil
	})
	if err != nil {
		return nil, sqlkit.Interpret("read erasure receipts", err)
	}
	return receipts, nil
}
