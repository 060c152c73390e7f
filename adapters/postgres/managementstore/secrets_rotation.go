package managementstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
)

// Resealing connection secrets and provider API tokens (`hephaestus rotate-credentials`, and
// the start-up migration of values sealed before key ids). Each secret is re-sealed in a transaction of its own that
// reads it under the row's lock: a concurrent secret change either commits first (and is
// re-sealed as changed) or waits for this short transaction, so a rotation never writes an
// older secret back over a newer one. Servers keep running: every one of them opens both
// forms while the rotation runs.
const (
	// connectionsWithSecrets pages the ids of connections that hold a secret or a provider API
	// token, in id order.
	connectionsWithSecrets = `
		SELECT id FROM connection WHERE (secret_ciphertext IS NOT NULL OR api_token_ciphertext IS NOT NULL)
		  AND id > $1 ORDER BY id LIMIT $2`
	// lockConnectionSecret reads both sealed values under the row lock a secret or token
	// update also takes. It waits for an admission holding the row FOR SHARE (milliseconds),
	// and admission waits for this transaction at most its lock timeout.
	lockConnectionSecret = `SELECT secret_ciphertext, api_token_ciphertext FROM connection WHERE id = $1 FOR UPDATE`
	// storeConnectionSecret writes the re-sealed values (NULL stays NULL); the plaintexts are
	// unchanged, so neither config_version nor anything a route depends on changes.
	storeConnectionSecret = `UPDATE connection SET secret_ciphertext = $2, api_token_ciphertext = $3 WHERE id = $1`
)

// ResealScope says which secrets ResealSecrets re-seals.
type ResealScope int

const (
	// ResealLegacy re-seals only values sealed before key ids (no associated data): the
	// start-up migration, safe whatever the key list of the server that runs it.
	ResealLegacy ResealScope = iota
	// ResealAll re-seals every value not sealed in the current form under the first key
	// (`hephaestus rotate-credentials`).
	ResealAll
)

// ResealResult counts what ResealSecrets did.
type ResealResult struct {
	Checked  int // sealed values read (secrets and API tokens)
	Resealed int // sealed values written again under the sealing key
}

// ResealSecrets re-seals the connection secrets and provider API tokens of scope with box's
// sealing key, one short transaction per connection; Checked and Resealed count values. Errors: a secret no key of box opens (named by connection id; the
// others are still re-sealed), a database error.
func ResealSecrets(ctx context.Context, pool *pgxpool.Pool, box *secrets.AESGCM, scope ResealScope) (ResealResult, error) {
	var (
		res  ResealResult
		errs []error
		last int64
	)
	for {
		rows, _ := pool.Query(ctx, connectionsWithSecrets, last, 500)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return res, pgutil.Interpret("list connections with secrets", err)
		}
		if len(ids) == 0 {
			return res, errors.Join(errs...)
		}
		for _, id := range ids {
			checked, resealed, err := resealOne(ctx, pool, box, scope, id)
			res.Checked += checked
			res.Resealed += resealed
			if err != nil {
				if ctx.Err() != nil {
					return res, err
				}
				errs = append(errs, err)
			}
		}
		last = ids[len(ids)-1]
	}
}

// resealOne re-seals the connection's secret and API token in one transaction: both or
// neither are written, so a value no key opens leaves the other as it was too.
func resealOne(ctx context.Context, pool *pgxpool.Pool, box *secrets.AESGCM, scope ResealScope, id int64) (checked, resealed int, err error) {
	err = pgutil.WithTx(ctx, pool, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		checked, resealed = 0, 0
		var secret, token []byte
		if err := tx.QueryRow(ctx, lockConnectionSecret, id).Scan(&secret, &token); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // deleted meanwhile
			}
			return pgutil.Interpret(fmt.Sprintf("lock secret of connection %d", id), err)
		}
		values := []*[]byte{&secret, &token}
		for i, v := range values {
			if *v == nil {
				continue // cleared meanwhile, or never set
			}
			again, err := reseal(box, scope, id, *v)
			if err != nil {
				return fmt.Errorf("connection %d %s: %w", id, [...]string{"secret", "api token"}[i], err)
			}
			checked++
			if again != nil {
				*v = again
				resealed++
			}
		}
		if resealed == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, storeConnectionSecret, id, secret, token); err != nil {
			return pgutil.Interpret(fmt.Sprintf("store secret of connection %d", id), err)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return checked, resealed, nil
}

// reseal is sealed sealed again under box's sealing key, or nil when scope leaves it as it is.
func reseal(box *secrets.AESGCM, scope ResealScope, id int64, sealed []byte) ([]byte, error) {
	form, err := box.FormOf(id, sealed)
	if err != nil {
		return nil, fmt.Errorf("%w (is every key that sealed it in HEPHAESTUS_CREDENTIALS_KEY?)", err)
	}
	if form == secrets.Current || (scope == ResealLegacy && form != secrets.Legacy) {
		return nil, nil
	}
	plain, err := box.Open(id, sealed)
	if err != nil {
		return nil, err
	}
	again, err := box.Seal(id, plain)
	clear(plain)
	return again, err
}
