// Package management holds the PostgreSQL stores behind the management API (accounts,
// workspaces, members, connections, subscriptions) and the connection directory that webhook
// verification reads.
package managementstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// Config configures the stores.
type Config struct {
	// Kinds are the connection kinds the provider modules declare; a stored kind is restored to
	// the declared one (with its webhook-URL and secret flags). A kind no module declares any
	// more is restored with its provider and no flags, so lists still show it.
	Kinds []connection.Kind
}

func (c Config) index() (map[string]connection.Kind, error) {
	idx := make(map[string]connection.Kind, len(c.Kinds))
	for _, k := range c.Kinds {
		if k.IsZero() {
			return nil, errors.New("postgres management: zero connection kind")
		}
		if _, dup := idx[k.String()]; dup {
			return nil, fmt.Errorf("postgres management: connection kind %s declared twice", k)
		}
		idx[k.String()] = k
	}
	return idx, nil
}

// kinds restores connection kinds read from storage.
type kinds map[string]connection.Kind

func (ks kinds) restore(name, prov string) (connection.Kind, error) {
	if k, ok := ks[name]; ok {
		return k, nil
	}
	k, err := connection.NewKind(connection.KindSpec{Name: name, Provider: provider.Restore(prov)})
	if err != nil {
		return connection.Kind{}, fmt.Errorf("restore connection kind: %w", err)
	}
	return k, nil
}

// liveSourceIndexPrefix begins the names of the partial unique indexes a provider's migration
// adds to keep one live connection of a kind per source key (an App installation, a team).
const liveSourceIndexPrefix = "uq_connection_"

func isLiveSourceViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlkit.UniqueViolation && strings.HasPrefix(pgErr.ConstraintName, liveSourceIndexPrefix)
}

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlkit.ForeignKeyViolation
}

// pageOf runs countSQL and listSQL (whose last two parameters are LIMIT and OFFSET) and scans
// each row with scan. REPEATABLE READ gives both statements one snapshot, so total never
// disagrees with the items.
func pageOf[T any](ctx context.Context, pool *pgxpool.Pool, op, countSQL, listSQL string, args []any,
	limit, offset int, scan func(pgx.CollectableRow) (T, error),
) (items []T, total int, err error) {
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err = sqlkit.WithTx(ctx, pool, snapshot, func(ctx context.Context, tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, countSQL, args...).Scan(&total); err != nil {
			return sqlkit.Interpret(op+": count", err)
		}
		rows, err := tx.Query(ctx, listSQL, append(append([]any{}, args...), limit, offset)...)
		if err != nil {
			return sqlkit.Interpret(op, err)
		}
		items, err = pgx.CollectRows(rows, scan)
		return sqlkit.Interpret(op, err)
	})
	if err != nil {
		return nil, 0, err
	}
	if items == nil {
		items = []T{}
	}
	return items, total, nil
}
