package erasurestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Preview implements ports.ErasureStore. One REPEATABLE READ snapshot, so the pairs found and
// the counts of every store describe the same moment.
func (s *Store) Preview(ctx context.Context, scope erasure.Scope) ([]ports.ErasureMatches, error) {
	m, err := s.matcherOf(scope.Provider())
	if err != nil {
		return nil, err
	}
	var out []ports.ErasureMatches
	err = sqlkit.WithTx(ctx, s.pool, readSnapshot,
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
	err := sqlkit.WithTx(ctx, s.pool, readSnapshot,
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

// scanRequest reads a stored request with its frozen scope.
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
	return erasure.RestoreRequest(erasure.StoredRequest{
		ID: id, Scope: erasure.RestoreScope(provider.Restore(prov), url, restoreIdentities(identities)), State: st,
		Passes: int(passes), Retries: int(retries), RequestedBy: requestedBy, CreatedAt: createdAt,
	}), nil
}

// readReceipts lists the receipts of erasure id, pass by pass in the order they were written.
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
