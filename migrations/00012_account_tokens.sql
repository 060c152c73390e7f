-- +goose Up

-- Several bearer tokens per account, each revocable and optionally expiring. Only the SHA-256
-- of a token is stored (tokens carry 256 random bits, so a fast unsalted hash is enough); the
-- lookup is equality on that hash. Revoking deletes the row, so a revoked token is unknown on
-- every server at the next request: no server caches tokens.
CREATE TABLE account_token (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    bigint      NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    token_hash    bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    -- Written at most once a minute per token (the authentication statement's own condition),
    -- so a busy token does not turn every request into a row update.
    last_used_at  timestamptz,
    CONSTRAINT uq_account_token_hash_v2 UNIQUE (token_hash)
);
CREATE INDEX ix_account_token_account ON account_token (account_id);

-- The single token every existing account had becomes its first token, so it keeps working.
INSERT INTO account_token (account_id, token_hash, created_at)
SELECT id, token_hash, created_at FROM account;

ALTER TABLE account DROP CONSTRAINT uq_account_token_hash;
ALTER TABLE account DROP COLUMN token_hash;
-- A disabled account keeps its row (audit records name its id and login) but no token of it
-- authenticates, and it gets no new one.
ALTER TABLE account ADD COLUMN disabled_at timestamptz;

-- Who replayed: an account, or the instance administrator's configured token, which is no
-- account. Before this migration the token was recorded as account id 0.
ALTER TABLE provider_event ADD COLUMN replayed_by_admin_token boolean NOT NULL DEFAULT false;
UPDATE provider_event SET replayed_by = NULL, replayed_by_admin_token = true WHERE replayed_by = 0;

ALTER TABLE provider_event_replay_audit ALTER COLUMN account_id DROP NOT NULL;
ALTER TABLE provider_event_replay_audit ADD COLUMN principal text NOT NULL DEFAULT 'ACCOUNT';
ALTER TABLE provider_event_replay_audit ADD COLUMN account_login text;
UPDATE provider_event_replay_audit SET principal = 'INSTANCE_ADMIN_TOKEN', account_id = NULL WHERE account_id = 0;
UPDATE provider_event_replay_audit r SET account_login = a.login FROM account a WHERE a.id = r.account_id;
ALTER TABLE provider_event_replay_audit ALTER COLUMN principal DROP DEFAULT;
ALTER TABLE provider_event_replay_audit ADD CONSTRAINT ck_replay_audit_principal
    CHECK ((principal = 'ACCOUNT' AND account_id IS NOT NULL)
        OR (principal = 'INSTANCE_ADMIN_TOKEN' AND account_id IS NULL));

-- +goose Down
ALTER TABLE provider_event_replay_audit DROP CONSTRAINT ck_replay_audit_principal;
UPDATE provider_event_replay_audit SET account_id = 0 WHERE principal = 'INSTANCE_ADMIN_TOKEN';
ALTER TABLE provider_event_replay_audit DROP COLUMN account_login;
ALTER TABLE provider_event_replay_audit DROP COLUMN principal;
ALTER TABLE provider_event_replay_audit ALTER COLUMN account_id SET NOT NULL;
UPDATE provider_event SET replayed_by = 0 WHERE replayed_by_admin_token;
ALTER TABLE provider_event DROP COLUMN replayed_by_admin_token;

ALTER TABLE account DROP COLUMN disabled_at;
ALTER TABLE account ADD COLUMN token_hash bytea;
-- Each account keeps its newest token; an account without one gets a hash nobody can present.
UPDATE account a SET token_hash = coalesce(
    (SELECT t.token_hash FROM account_token t WHERE t.account_id = a.id ORDER BY t.id DESC LIMIT 1),
    sha256(('revoked:' || a.id || ':' || gen_random_uuid())::bytea));
ALTER TABLE account ALTER COLUMN token_hash SET NOT NULL;
ALTER TABLE account ADD CONSTRAINT uq_account_token_hash UNIQUE (token_hash);
DROP TABLE account_token;
