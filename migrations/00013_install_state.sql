-- +goose Up

-- The nonces of install-flow states that have been used. A state is signed and expires after an
-- hour; recording its nonce when the provider sends the person back makes it single-use on
-- every server: the INSERT … ON CONFLICT DO NOTHING of the second use inserts nothing. A row is
-- only needed while its state could still verify, so rows past expires_at are deleted.
CREATE TABLE install_state_use (
    nonce       text        PRIMARY KEY,
    used_at     timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX ix_install_state_use_expires ON install_state_use (expires_at);

-- +goose Down
DROP TABLE install_state_use;
