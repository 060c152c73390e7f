-- +goose Up

-- Sessions of the operator console (/console). The cookie holds a random 256-bit session id;
-- only its SHA-256 is stored, so this table cannot be replayed as cookies. A session belongs to
-- the token it was signed in with: an account token's session references it and is deleted
-- with it (revocation and rotation delete the token row), and the lookup also refuses an
-- expired token and a disabled account, so such a session ends at its next request on every
-- server. A session of the configured instance administrator token (no account, no token row)
-- keeps the token's SHA-256 to be compared with the configured one, so changing the
-- configured token ends those sessions. csrf is the session's form token.
CREATE TABLE console_session (
    id_hash          bytea       PRIMARY KEY,
    account_id       bigint      REFERENCES account (id) ON DELETE CASCADE,
    token_id         bigint      REFERENCES account_token (id) ON DELETE CASCADE,
    admin_token_hash bytea,
    csrf             bytea       NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    CONSTRAINT ck_console_session_principal CHECK (
        (account_id IS NOT NULL AND token_id IS NOT NULL AND admin_token_hash IS NULL)
        OR (account_id IS NULL AND token_id IS NULL AND admin_token_hash IS NOT NULL))
);
CREATE INDEX ix_console_session_token ON console_session (token_id);
CREATE INDEX ix_console_session_expires ON console_session (expires_at);

-- +goose Down
DROP TABLE console_session;
