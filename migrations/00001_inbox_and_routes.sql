-- +goose Up

-- Workspaces own connections, subscriptions and inbox rows. Deleting one cascades to all of them.
CREATE TABLE workspace (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug        text        NOT NULL,
    name        text        NOT NULL,
    state       text        NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE', 'SUSPENDED')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_workspace_slug UNIQUE (slug)
);

-- Accounts authenticate with bearer tokens; only a SHA-256 hash of the token is stored.
CREATE TABLE account (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    login           text        NOT NULL,
    instance_admin  boolean     NOT NULL DEFAULT false,
    token_hash      bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_account_login UNIQUE (login),
    CONSTRAINT uq_account_token_hash UNIQUE (token_hash)
);

CREATE TABLE workspace_member (
    workspace_id  bigint NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    account_id    bigint NOT NULL REFERENCES account (id) ON DELETE CASCADE,
    role          text   NOT NULL CHECK (role IN ('ADMIN', 'MEMBER')),
    PRIMARY KEY (workspace_id, account_id)
);

-- A connection is one workspace's link to a provider. Its row is also its lifecycle lock:
-- activate, suspend, uninstall and admission all take FOR UPDATE / FOR SHARE on it, so a
-- suspension either commits before admission reads the state or waits for the inbox insert.
-- config_version is bumped by every change of routing configuration (secret, config,
-- subscriptions) so admission can tell that the route changed while it waited for the lock.
CREATE TABLE connection (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    -- Kinds and providers are declared by the provider adapters, so they are not a CHECK list.
    kind               text        NOT NULL CHECK (kind ~ '^[A-Z][A-Z0-9_]+$'),
    provider           text        NOT NULL CHECK (provider ~ '^[A-Z][A-Z0-9_]+$'),
    state              text        NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE', 'SUSPENDED', 'UNINSTALLED')),
    source_server_url  text        NOT NULL,
    config             jsonb       NOT NULL DEFAULT '{}'::jsonb,
    secret_ciphertext  bytea,
    config_version     bigint      NOT NULL DEFAULT 1,
    -- The provider's routing key of the source, copied out of config by the provider adapter so
    -- admission finds the source with an index: a GitHub App's installation id, a Slack team id.
    source_key         text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ix_connection_workspace ON connection (workspace_id, id);
-- One live App connection per installation: the installation id in a signed body names one source.
CREATE UNIQUE INDEX uq_connection_installation ON connection (source_key)
    WHERE kind = 'GITHUB_APP' AND state <> 'UNINSTALLED';
CREATE INDEX ix_connection_source ON connection (provider, source_key) WHERE source_key IS NOT NULL;

-- ProviderEventSubscriptions: which workspace monitors which resource through which connection.
CREATE TABLE connection_subscription (
    connection_id  bigint NOT NULL REFERENCES connection (id) ON DELETE CASCADE,
    workspace_id   bigint NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    provider       text   NOT NULL,
    resource_type  text   NOT NULL CHECK (resource_type ~ '^[a-z][a-z_]+$'),
    resource_id    text   NOT NULL,
    name           text   NOT NULL DEFAULT '',
    PRIMARY KEY (connection_id, resource_type, resource_id)
);
CREATE INDEX ix_connection_subscription_route ON connection_subscription (provider, resource_type, resource_id);

-- The transactional inbox. One row per admitted (workspace, delivery); installation control
-- events have a NULL workspace and the one system scope.
CREATE TABLE provider_event (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  bigint REFERENCES workspace (id) ON DELETE CASCADE,
    connection_id bigint,
    provider      text        NOT NULL,
    event_type    text        NOT NULL,
    delivery_key  text        NOT NULL,
    scope_key     text        NOT NULL,
    subject       text        NOT NULL,
    payload       jsonb       NOT NULL,
    headers       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    state         text        NOT NULL DEFAULT 'QUEUED' CHECK (state IN ('QUEUED', 'LEASED', 'DONE', 'DEAD')),
    -- attempt counts every claim (it drives the backoff and is shown to operators);
    -- unknown_failures counts only what uses the poison budget (unknown failures, expiries).
    attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    unknown_failures  integer NOT NULL DEFAULT 0 CHECK (unknown_failures >= 0),
    lease_epoch   bigint      NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    leased_until  timestamptz,
    leased_by     text,
    due_at        timestamptz NOT NULL DEFAULT now(),
    received_at   timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz,
    error_class   text,
    replayed_by   bigint,
    replayed_at   timestamptz,
    CONSTRAINT ck_provider_event_leased CHECK ((state = 'LEASED') = (leased_until IS NOT NULL)),
    CONSTRAINT ck_provider_event_ended CHECK ((state IN ('DONE', 'DEAD')) = (ended_at IS NOT NULL))
);

-- A provider's retry or redelivery adds no row: INSERT … ON CONFLICT DO NOTHING on this index.
-- NULLS NOT DISTINCT makes installation rows (NULL workspace) deduplicate too.
CREATE UNIQUE INDEX uq_provider_event_delivery
    ON provider_event (workspace_id, provider, delivery_key) NULLS NOT DISTINCT;

-- The database backstop for one leased row per scope.
CREATE UNIQUE INDEX uq_provider_event_leased_scope
    ON provider_event (scope_key) WHERE state = 'LEASED';

-- Claiming walks QUEUED rows in id order and asks, per candidate, whether an older QUEUED row of
-- its scope exists: both questions are answered by these two partial indexes.
CREATE INDEX ix_provider_event_queued ON provider_event (id) WHERE state = 'QUEUED';
CREATE INDEX ix_provider_event_queued_scope ON provider_event (scope_key, id) WHERE state = 'QUEUED';
-- The reaper looks for expired leases (leased_until < now() implies the predicate). The predicate
-- is deliberately not state = 'LEASED': the claim's "scope has a LEASED row" probe must find only
-- uq_provider_event_leased_scope (an index lookup by scope_key); with two partial indexes of the
-- same predicate the planner may pick this one and scan it whole per claim.
CREATE INDEX ix_provider_event_lease_expiry ON provider_event (leased_until) WHERE leased_until IS NOT NULL;
-- Retention deletes ended rows by age; dead-letter lists page DEAD rows newest first per workspace.
CREATE INDEX ix_provider_event_ended ON provider_event (state, ended_at) WHERE state IN ('DONE', 'DEAD');
CREATE INDEX ix_provider_event_dead ON provider_event (workspace_id, ended_at DESC, id DESC) WHERE state = 'DEAD';

-- Each committed handler step. No person data: names are operation names and stable item ids.
CREATE TABLE provider_event_step (
    event_id      bigint      NOT NULL REFERENCES provider_event (id) ON DELETE CASCADE,
    step_name     text        NOT NULL,
    committed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, step_name)
);

-- Audit of replays of installation rows, committed in the replay transaction.
CREATE TABLE provider_event_replay_audit (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     bigint      NOT NULL,
    account_id   bigint      NOT NULL,
    replayed_at  timestamptz NOT NULL,
    workspace_id bigint
);

-- Which server runs retention: a lease row, taken with a conditional update, so exactly one
-- server holds it at a time and a crashed holder is replaced when its lease expires.
CREATE TABLE singleton_lease (
    name         text PRIMARY KEY,
    holder       text,
    leased_until timestamptz
);
INSERT INTO singleton_lease (name) VALUES ('inbox-retention');

-- +goose Down
DROP TABLE singleton_lease;
DROP TABLE provider_event_replay_audit;
DROP TABLE provider_event_step;
DROP TABLE provider_event;
DROP TABLE connection_subscription;
DROP TABLE connection;
DROP TABLE workspace_member;
DROP TABLE account;
DROP TABLE workspace;
