package managementstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
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
	// Legacy counts the values left sealed before key ids: the box's legacy gate no longer lets
	// them open (the fallback is closed), so they are not re-sealed, which would bind a value
	// that may have been copied from another connection to this one.
	Legacy int
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
			return res, sqlkit.Interpret("list connections with secrets", err)
		}
		if len(ids) == 0 {
			return res, errors.Join(errs...)
		}
		for _, id := range ids {
			one, err := resealOne(ctx, pool, box, scope, id)
			res.Checked += one.Checked
			res.Resealed += one.Resealed
			res.Legacy += one.Legacy
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

// RotateSecrets is `hephaestus rotate-credentials`: ResealSecrets of every secret with box,
// whose legacy gate is fallback's, then, when every secret was re-sealed without a failure,
// fallback.Close: from then on no server opens a value sealed before key ids. closed reports
// that the fallback is closed. Errors: ResealSecrets' (the fallback then stays as it was), the
// database.
func RotateSecrets(ctx context.Context, pool *pgxpool.Pool, box *secrets.AESGCM, fallback *LegacyFallback) (res ResealResult, closed bool, err error) {
	res, err = ResealSecrets(ctx, pool, box, ResealAll)
	if err != nil {
		return res, false, err
	}
	// Every secret opened and is in the current form now; a legacy value left behind is one
	// the fallback already refused.
	if err := fallback.Close(ctx); err != nil {
		return res, false, err
	}
	return res, true, nil
}

// resealOne re-seals the connection's secret and API token in one transaction: both or
// neither are written, so a value no key opens leaves the other as it was too.
func resealOne(ctx context.Context, pool *pgxpool.Pool, box *secrets.AESGCM, scope ResealScope, id int64) (res ResealResult, err error) {
	err = sqlkit.WithTx(ctx, pool, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		res = ResealResult{}
		var secret, token []byte
		if err := tx.QueryRow(ctx, lockConnectionSecret, id).Scan(&secret, &token); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // deleted meanwhile
			}
			return sqlkit.Interpret(fmt.Sprintf("lock secret of connection %d", id), err)
		}
		values := []*[]byte{&secret, &token}
		for i, v := range values {
			if *v == nil {
				continue // cleared meanwhile, or never set
			}
			again, legacy, err := reseal(box, scope, id, *v)
			if err != nil {
				return fmt.Errorf("connection %d %s: %w", id, [...]string{"secret", "api token"}[i], err)
			}
			res.Checked++
			if legacy {
				res.Legacy++
			}
			if again != nil {
				*v = again
				res.Resealed++
			}
		}
		if res.Resealed == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, storeConnectionSecret, id, secret, token); err != nil {
			return sqlkit.Interpret(fmt.Sprintf("store secret of connection %d", id), err)
		}
		return nil
	})
	if err != nil {
		return ResealResult{}, err
	}
	return res, nil
}

// reseal is sealed sealed again under box's sealing key, or nil when scope leaves it as it is;
// legacy reports a value left in the legacy form because the box no longer opens it.
func reseal(box *secrets.AESGCM, scope ResealScope, id int64, sealed []byte) (again []byte, legacy bool, err error) {
	form, err := box.FormOf(id, sealed)
	if err != nil {
		return nil, false, fmt.Errorf("%w (is every key that sealed it in HEPHAESTUS_CREDENTIALS_KEY?)", err)
	}
	if form == secrets.Legacy && !box.LegacyOpens() {
		return nil, true, nil
	}
	if form == secrets.Current || (scope == ResealLegacy && form != secrets.Legacy) {
		return nil, false, nil
	}
	plain, err := box.Open(id, sealed)
	if err != nil {
		return nil, false, err
	}
	again, err = box.Seal(id, plain)
	clear(plain)
	return again, false, err
}
