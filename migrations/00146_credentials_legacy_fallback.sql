-- Whether connection secrets sealed before key ids still open.
--
-- A value sealed before key ids (nonce || ciphertext, no associated data) is not bound to its
-- connection: it opens for any connection id. Such values keep opening (every server start
-- re-seals those it finds) until `hephaestus rotate-credentials` has re-sealed every secret
-- without a failure; it then sets legacy_closed_at, and from then on no server opens a value in
-- that form (adapters/postgres/managementstore.LegacyFallback). Closing is for good: nothing
-- sets the column back to NULL. One row, as route_epoch.

-- +goose Up
CREATE TABLE credentials_state (
    id               boolean     PRIMARY KEY DEFAULT true CHECK (id),
    legacy_closed_at timestamptz
);
INSERT INTO credentials_state DEFAULT VALUES;

-- +goose Down
DROP TABLE credentials_state;
