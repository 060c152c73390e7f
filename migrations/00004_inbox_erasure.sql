-- +goose Up

-- Person-erasure requests of the two inbox stores (workspace rows, installation rows).
-- identities is the frozen identity scope, [{"id":"583231","login":"octocat"}, …] (either
-- half may be absent): the requested identities plus the id↔login pairs found at start in
-- matching payloads, so a later rename cannot escape. It is person data kept for as long as the
-- request, because resume repeats the passes with it. passes counts the passes asked for
-- (1 at start, +1 per resume); a request is DONE when every store has a receipt for each.
-- A runner holds a RUNNING request with FOR NO KEY UPDATE SKIP LOCKED while it works, so one
-- server works one request and a dead server's session releases it.
CREATE TABLE inbox_erasure (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider           text        NOT NULL,
    source_server_url  text        NOT NULL,
    identities         jsonb       NOT NULL CHECK (jsonb_typeof(identities) = 'array'),
    state              text        NOT NULL DEFAULT 'RUNNING' CHECK (state IN ('RUNNING', 'DONE', 'FAILED')),
    passes             integer     NOT NULL DEFAULT 1 CHECK (passes >= 1),
    requested_by       bigint      NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- Runners look for RUNNING requests only.
CREATE INDEX ix_inbox_erasure_running ON inbox_erasure (id) WHERE state = 'RUNNING';

-- The keys of the rows the scope matched at start. A pass deletes rows with these keys even
-- when the live predicate no longer matches them. Keys hold no person data. No foreign key to
-- workspace: a deleted workspace's rows are gone with it and its keys then match nothing.
CREATE TABLE inbox_erasure_key (
    erasure_id    bigint NOT NULL REFERENCES inbox_erasure (id) ON DELETE CASCADE,
    workspace_id  bigint,
    provider      text   NOT NULL,
    delivery_key  text   NOT NULL,
    CONSTRAINT uq_inbox_erasure_key UNIQUE NULLS NOT DISTINCT (erasure_id, workspace_id, provider, delivery_key)
);
-- A pass looks up each candidate row's key among the keys of its request.
CREATE INDEX ix_inbox_erasure_key_lookup ON inbox_erasure_key (provider, delivery_key);

-- One receipt per committed pass over one store, written in the pass's deletion transaction.
-- boundary is the highest provider_event id the pass covered.
CREATE TABLE inbox_erasure_receipt (
    erasure_id  bigint      NOT NULL REFERENCES inbox_erasure (id) ON DELETE CASCADE,
    store       text        NOT NULL CHECK (store IN ('workspace-inbox', 'installation-inbox')),
    pass        integer     NOT NULL CHECK (pass >= 1),
    deleted     bigint      NOT NULL CHECK (deleted >= 0),
    boundary    bigint      NOT NULL,
    at          timestamptz NOT NULL,
    PRIMARY KEY (erasure_id, store, pass)
);

-- +goose Down
DROP TABLE inbox_erasure_receipt;
DROP TABLE inbox_erasure_key;
DROP TABLE inbox_erasure;
