// Package consolesession stores the operator console's sessions in PostgreSQL (migration
// 00022): the SHA-256 of the cookie's random id, the token the session was signed in with, the
// session's CSRF token and its expiry.
package consolesession

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const (
	// createSession stores a new session; expired sessions are deleted by the same statement
	// (at most a few hundred rows a sign-in, on ix_console_session_expires), so the table stays
	// as small as the live sessions without a background loop.
	createSession = `
WITH expired AS (
    DELETE FROM console_session
    WHERE id_hash IN (SELECT id_hash FROM console_session WHERE expires_at <= now() LIMIT 500)
)
INSERT INTO console_session (id_hash, account_id, token_id, admin_token_hash, csrf, expires_at)
VALUES ($1, $2, $3, $4, $5, now() + $6::interval)`

	// sessionByID reads a live session with its principal. An account session needs its token
	// row (deleted on revocation and rotation), the token unexpired and the account not
	// disabled: the same conditions as a bearer token's lookup, checked at every request.
	sessionByID = `
SELECT s.account_id, s.token_id, s.admin_token_hash, s.csrf, coalesce(a.instance_admin, false)
FROM console_session s
LEFT JOIN account_token t ON t.id = s.token_id
LEFT JOIN account a ON a.id = s.account_id
WHERE s.id_hash = $1
  AND s.expires_at > now()
  AND (s.token_id IS NULL
       OR (t.id IS NOT NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND a.disabled_at IS NULL))`

	deleteSession = `DELETE FROM console_session WHERE id_hash = $1`
)

// Store is the session table. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
}

// New returns the store on pool.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("consolesession: pool is required")
	}
	return &Store{pool: pool}, nil
}

func hashID(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// Create stores the session id for p, signed in with the administrator token whose SHA-256 is
// adminTokenHash (nil for an account token, whose id p carries), valid for ttl.
func (s *Store) Create(ctx context.Context, id string, p ports.Principal, adminTokenHash, csrf []byte, ttl time.Duration) error {
	var account, token *int64
	if adminTokenHash == nil {
		if p.TokenID <= 0 {
			return fmt.Errorf("create console session: %w", ports.ErrMalformed)
		}
		account, token = &p.AccountID, &p.TokenID
	}
	interval := fmt.Sprintf("%d milliseconds", ttl.Milliseconds())
	if _, err := s.pool.Exec(ctx, createSession, hashID(id), account, token, adminTokenHash, csrf, interval); err != nil {
		return sqlkit.Interpret("create console session", err)
	}
	return nil
}

// Lookup reads the live session id. Errors: ports.ErrNotFound (unknown, expired, or its token
// revoked, expired or its account disabled).
func (s *Store) Lookup(ctx context.Context, id string) (ports.ConsoleSession, error) {
	var (
		account, token *int64
		out            ports.ConsoleSession
		admin          bool
	)
	err := s.pool.QueryRow(ctx, sessionByID, hashID(id)).Scan(&account, &token, &out.AdminTokenHash, &out.CSRF, &admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.ConsoleSession{}, fmt.Errorf("console session: %w", ports.ErrNotFound)
	}
	if err != nil {
		return ports.ConsoleSession{}, sqlkit.Interpret("console session", err)
	}
	if account == nil {
		out.Principal = ports.Principal{AccountID: ports.InstanceAdminAccountID, InstanceAdmin: true}
	} else {
		out.Principal = ports.Principal{AccountID: *account, InstanceAdmin: admin, TokenID: *token}
	}
	return out, nil
}

// Delete ends the session id (sign-out); an unknown id is no error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, deleteSession, hashID(id)); err != nil {
		return sqlkit.Interpret("delete console session", err)
	}
	return nil
}
