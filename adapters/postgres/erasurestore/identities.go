package erasurestore

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// discoveryRounds bounds how often start looks for id↔login pairs with the pairs it found
// (a login found by id can name older payloads that carry yet another id, and so on).
const discoveryRounds = 4

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

// restoreIdentities is the domain form of a frozen scope's stored identities.
func restoreIdentities(stored []identityJSON) []erasure.Identity {
	ids := make([]erasure.Identity, len(stored))
	for i, v := range stored {
		ids[i] = erasure.RestoreIdentity(v.ID, v.Login, v.Email)
	}
	return ids
}

// scanScope reads a stored scope: provider, source namespace and identities.
func scanScope(row pgx.Row) (erasure.Scope, error) {
	var (
		prov, url  string
		identities []identityJSON
	)
	if err := row.Scan(&prov, &url, &identities); err != nil {
		return erasure.Scope{}, err
	}
	return erasure.RestoreScope(provider.Restore(prov), url, restoreIdentities(identities)), nil
}
