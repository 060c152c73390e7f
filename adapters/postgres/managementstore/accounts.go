package managementstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const (
	// createAccount inserts the account and its first token in one statement, so an account
	// never exists without a way to use it.
	createAccount = `
		WITH a AS (
			INSERT INTO account (login, instance_admin) VALUES ($1, $2)
			RETURNING id, login, instance_admin, created_at
		), t AS (
			INSERT INTO account_token (account_id, token_hash) SELECT id, $3 FROM a
		)
		SELECT id, login, instance_admin, created_at FROM a`

	// tokenOwner is the one statement of every authenticated request: the token's owner by
	// equality on the hash (uq_account_token_hash_v2), live and of an enabled account, and the
	// last-use write when the recorded one is over a minute old. Under READ COMMITTED two
	// concurrent requests both see the old time, but the second UPDATE re-evaluates its WHERE
	// on the row the first one committed and writes nothing, so a token is written at most
	// once a minute on all servers together. Nothing is cached anywhere: a revocation or a
	// disabled account is seen by the next statement on every server.
	tokenOwner = `
		WITH t AS (
			SELECT t.id, t.last_used_at, a.id AS account_id, a.login, a.instance_admin, a.created_at
			FROM account_token t JOIN account a ON a.id = t.account_id
			WHERE t.token_hash = $1 AND a.disabled_at IS NULL
			  AND (t.expires_at IS NULL OR t.expires_at > clock_timestamp())
		), touched AS (
			UPDATE account_token u SET last_used_at = clock_timestamp()
			FROM t WHERE u.id = t.id
			  AND (u.last_used_at IS NULL OR u.last_used_at <= clock_timestamp() - interval '1 minute')
		)
		SELECT id, account_id, login, instance_admin, created_at FROM t`

	enabledAccount = `SELECT id, login, instance_admin, created_at FROM account WHERE id = $1 AND disabled_at IS NULL`

	// liveToken is tokenOwner's conditions for a token named by its id (an install flow's
	// starter, checked again at the callback): no lock, a point-in-time read, because the
	// flow only needs to stop once a revocation, rotation, expiry or disable has committed.
	liveToken = `
		SELECT t.id, a.id, a.login, a.instance_admin, a.created_at
		FROM account_token t JOIN account a ON a.id = t.account_id
		WHERE t.id = $2 AND t.account_id = $1 AND a.disabled_at IS NULL
		  AND (t.expires_at IS NULL OR t.expires_at > clock_timestamp())`

	tokenColumns = `id, account_id, created_at, expires_at, last_used_at`
	// issueToken inserts only for an enabled account and an expiry in the future; lockAccount
	// ran first in the same transaction, so a concurrent disable cannot slip in between.
	issueToken = `
		INSERT INTO account_token (account_id, token_hash, expires_at)
		SELECT $1, $2, $3 WHERE $3::timestamptz IS NULL OR $3::timestamptz > clock_timestamp()
		RETURNING ` + tokenColumns
	// lockAccount takes the account row FOR UPDATE: issuing, rotating and disabling serialise
	// on it, so no token is issued to an account whose disable commits concurrently.
	lockAccount   = `SELECT disabled_at IS NOT NULL FROM account WHERE id = $1 FOR UPDATE`
	accountExists = `SELECT true FROM account WHERE id = $1`
	listTokens    = `SELECT ` + tokenColumns + ` FROM account_token
		WHERE account_id = $1 AND (expires_at IS NULL OR expires_at > clock_timestamp()) ORDER BY id LIMIT $2 OFFSET $3`
	countTokens = `SELECT count(*) FROM account_token
		WHERE account_id = $1 AND (expires_at IS NULL OR expires_at > clock_timestamp())`
	revokeToken = `DELETE FROM account_token WHERE account_id = $1 AND id = $2`
	// takeToken deletes the live token being replaced and hands its expiry to the new one.
	takeToken = `DELETE FROM account_token WHERE account_id = $1 AND id = $2
		AND (expires_at IS NULL OR expires_at > clock_timestamp()) RETURNING expires_at`
	insertToken = `INSERT INTO account_token (account_id, token_hash, expires_at) VALUES ($1, $2, $3)
		RETURNING ` + tokenColumns
	disableAccount = `UPDATE account SET disabled_at = coalesce(disabled_at, clock_timestamp()) WHERE id = $1`
	deleteTokens   = `DELETE FROM account_token WHERE account_id = $1`
)

// CreateAccount implements ports.AccountStore.
func (w *Workspaces) CreateAccount(ctx context.Context, login string, instanceAdmin bool, tokenHash []byte) (ports.Account, error) {
	var a ports.Account
	err := w.pool.QueryRow(ctx, createAccount, login, instanceAdmin, tokenHash).
		Scan(&a.ID, &a.Login, &a.InstanceAdmin, &a.CreatedAt)
	return a, sqlkit.Interpret("create account", err)
}

// Account implements ports.AccountStore.
func (w *Workspaces) Account(ctx context.Context, id int64) (ports.Account, error) {
	var a ports.Account
	err := w.pool.QueryRow(ctx, enabledAccount, id).Scan(&a.ID, &a.Login, &a.InstanceAdmin, &a.CreatedAt)
	return a, sqlkit.Interpret(fmt.Sprintf("account %d", id), err)
}

// LiveToken implements ports.AccountStore.
func (w *Workspaces) LiveToken(ctx context.Context, accountID, tokenID int64) (ports.TokenOwner, error) {
	var o ports.TokenOwner
	err := w.pool.QueryRow(ctx, liveToken, accountID, tokenID).
		Scan(&o.TokenID, &o.Account.ID, &o.Account.Login, &o.Account.InstanceAdmin, &o.Account.CreatedAt)
	return o, sqlkit.Interpret(fmt.Sprintf("token %d of account %d", tokenID, accountID), err)
}

// TokenOwner implements ports.AccountStore.
func (w *Workspaces) TokenOwner(ctx context.Context, tokenHash []byte) (ports.TokenOwner, error) {
	var o ports.TokenOwner
	err := w.pool.QueryRow(ctx, tokenOwner, tokenHash).
		Scan(&o.TokenID, &o.Account.ID, &o.Account.Login, &o.Account.InstanceAdmin, &o.Account.CreatedAt)
	return o, sqlkit.Interpret("token owner", err)
}

func scanToken(row pgx.CollectableRow) (ports.Token, error) {
	var t ports.Token
	err := row.Scan(&t.ID, &t.AccountID, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt)
	return t, err
}

// lockEnabledAccount takes the account's row lock in tx. Errors: ErrNotFound; ErrConflict
// "account-disabled".
func lockEnabledAccount(ctx context.Context, tx pgx.Tx, accountID int64) error {
	var disabled bool
	if err := tx.QueryRow(ctx, lockAccount, accountID).Scan(&disabled); err != nil {
		return sqlkit.Interpret(fmt.Sprintf("account %d", accountID), err)
	}
	if disabled {
		return ports.Reject(ports.ErrConflict, "account-disabled", "")
	}
	return nil
}

// IssueToken implements ports.AccountStore.
func (w *Workspaces) IssueToken(ctx context.Context, accountID int64, tokenHash []byte, expiresAt *time.Time) (out ports.Token, err error) {
	err = sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockEnabledAccount(ctx, tx, accountID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, issueToken, accountID, tokenHash, expiresAt)
		out, err = pgx.CollectExactlyOneRow(rows, scanToken)
		if errors.Is(err, pgx.ErrNoRows) {
			return ports.Reject(ports.ErrMalformed, "invalid-expires-at", "not in the future")
		}
		return sqlkit.Interpret("issue token", err)
	})
	return out, err
}

// ListTokens implements ports.AccountStore.
// The count and the page come from one snapshot.
func (w *Workspaces) ListTokens(ctx context.Context, accountID int64, page ports.PageRequest) (out []ports.Token, total int, err error) {
	err = sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, accountExists, accountID).Scan(&ok); err != nil {
			return sqlkit.Interpret(fmt.Sprintf("account %d", accountID), err)
		}
		if err := tx.QueryRow(ctx, countTokens, accountID).Scan(&total); err != nil {
			return sqlkit.Interpret("count tokens", err)
		}
		rows, _ := tx.Query(ctx, listTokens, accountID, page.Size, page.Offset())
		out, err = pgx.CollectRows(rows, scanToken)
		return sqlkit.Interpret("list tokens", err)
	})
	if err == nil && out == nil {
		out = []ports.Token{}
	}
	return out, total, err
}

// RevokeToken implements ports.AccountStore.
func (w *Workspaces) RevokeToken(ctx context.Context, accountID, tokenID int64) error {
	tag, err := w.pool.Exec(ctx, revokeToken, accountID, tokenID)
	if err != nil {
		return sqlkit.Interpret("revoke token", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("token %d of account %d: %w", tokenID, accountID, ports.ErrNotFound)
	}
	return nil
}

// ReplaceToken implements ports.AccountStore.
func (w *Workspaces) ReplaceToken(ctx context.Context, accountID, tokenID int64, newHash []byte) (out ports.Token, err error) {
	err = sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockEnabledAccount(ctx, tx, accountID); err != nil {
			return err
		}
		var expiresAt *time.Time
		if err := tx.QueryRow(ctx, takeToken, accountID, tokenID).Scan(&expiresAt); err != nil {
			return sqlkit.Interpret(fmt.Sprintf("token %d of account %d", tokenID, accountID), err)
		}
		rows, _ := tx.Query(ctx, insertToken, accountID, newHash, expiresAt)
		out, err = pgx.CollectExactlyOneRow(rows, scanToken)
		return sqlkit.Interpret("insert rotated token", err)
	})
	return out, err
}

// DisableAccount implements ports.AccountStore.
func (w *Workspaces) DisableAccount(ctx context.Context, accountID int64) error {
	return sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, disableAccount, accountID)
		if err != nil {
			return sqlkit.Interpret("disable account", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("account %d: %w", accountID, ports.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, deleteTokens, accountID); err != nil {
			return sqlkit.Interpret("delete tokens of disabled account", err)
		}
		return nil
	})
}

const (
	countAccounts = `SELECT count(*) FROM account`
	listAccounts  = `SELECT id, login, instance_admin, created_at, disabled_at FROM account ORDER BY id LIMIT $1 OFFSET $2`
)

func scanAccount(row pgx.CollectableRow) (ports.Account, error) {
	var a ports.Account
	err := row.Scan(&a.ID, &a.Login, &a.InstanceAdmin, &a.CreatedAt, &a.DisabledAt)
	return a, err
}

// ListAccounts implements ports.AccountStore: the count and the page from one snapshot.
func (w *Workspaces) ListAccounts(ctx context.Context, page ports.PageRequest) ([]ports.Account, int, error) {
	return pageOf(ctx, w.pool, "list accounts", countAccounts, listAccounts, nil, page.Size, page.Offset(), scanAccount)
}
