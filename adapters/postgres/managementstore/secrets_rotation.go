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

// Resealing connection secrets (`hephaestus rotate-credentials`, and the start-up migration of
// values sealed before key ids). Each secret is re-sealed in a transaction of its own that
// reads it under the row's lock: a concurrent secret change either commits first (and is
// re-sealed as changed) or waits for this short transaction, so a rotation never writes an
// older secret back over a newer one. Servers keep running: every one of them opens both
// forms while the rotation runs.
const (
	// connectionsWithSecrets pages the ids of connections that hold a secret, in id order.
	connectionsWithSecrets = `
		SELECT id FROM connection WHERE secret_ciphertext IS NOT NULL AND id > $1 ORDER BY id LIMIT $2`
	// lockConnectionSecret reads a secret under the row lock a secret update also takes. It
	// waits for an admission holding the row FOR SHARE (milliseconds), and admission waits for
	// this transaction at most its lock timeout.
	lockConnectionSecret = `SELECT secret_ciphertext FROM connection WHERE id = $1 FOR UPDATE`
	// storeConnectionSecret writes the re-sealed value; the plaintext is unchanged, so neither
	// config_version nor anything a route depends on changes.
	storeConnectionSecret = `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`
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
	Checked  int // secrets read
	Resealed int // secrets written again under the sealing key
}

// ResealSecrets re-seals the connection secrets of scope with box's sealing key, one short
// transaction per secret. Errors: a secret no key of box opens (named by connection id; the
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
			resealed, err := resealOne(ctx, pool, box, scope, id)
			if err != nil {
				if ctx.Err() != nil {
					return res, err
				}
				errs = append(errs, err)
				continue
			}
			res.Checked++
			if resealed {
				res.Resealed++
			}
		}
		last = ids[len(ids)-1]
	}
}

func resealOne(ctx context.Context, pool *pgxpool.Pool, box *secrets.AESGCM, scope ResealScope, id int64) (resealed bool, err error) {
	err = pgutil.WithTx(ctx, pool, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		var sealed []byte
		if err := tx.QueryRow(ctx, lockConnectionSecret, id).Scan(&sealed); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // deleted meanwhile
			}
			return pgutil.Interpret(fmt.Sprintf("lock secret of connection %d", id), err)
		}
		if sealed == nil {
			return nil // cleared meanwhile
		}
		form, err := box.FormOf(id, sealed)
		if err != nil {
			return fmt.Errorf("connection %d: %w (is every key that sealed it in HEPHAESTUS_CREDENTIALS_KEY?)", id, err)
		}
		if form == secrets.Current || (scope == ResealLegacy && form != secrets.Legacy) {
			return nil
		}
		plain, err := box.Open(id, sealed)
		if err != nil {
			return fmt.Errorf("connection %d: %w", id, err)
		}
		again, err := box.Seal(id, plain)
		clear(plain)
		if err != nil {
			return fmt.Errorf("connection %d: %w", id, err)
		}
		if _, err := tx.Exec(ctx, storeConnectionSecret, id, again); err != nil {
			return pgutil.Interpret(fmt.Sprintf("store secret of connection %d", id), err)
		}
		resealed = true
		return nil
	})
	return resealed, err
}
