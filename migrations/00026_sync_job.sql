-- +goose Up

-- Backfill and teardown jobs (CONTRACT.md "Sync and teardown"): one durable row per
-- (connection, kind, resource), leased like an inbox row. The lease columns have the inbox's
-- names and meaning (provider_event.lease_epoch, leased_until, leased_by, due_at, attempt):
-- a claim moves lease_epoch up by one and runs the lease from the database clock, every write
-- of the holder is fenced by (leased_by, lease_epoch), and a lease that ran out is taken over
-- by the next claim, which continues from the committed cursor.
--
--   state      QUEUED (due at due_at), RUNNING (leased), DONE, FAILED (last_error says why)
--   cursor     the provider's opaque position after the last committed page (NULL: start)
--   items      mirror writes committed, pages: pages committed (both with the page's writes)
--   attempt    failed attempts of the current page that counted against the budget
--   last_error a classified cause ("provider-unreadable"), never a message or a token
CREATE TABLE sync_job (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id   bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    connection_id  bigint      NOT NULL REFERENCES connection (id) ON DELETE CASCADE,
    provider       text        NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('BACKFILL', 'TEARDOWN')),
    resource_type  text        NOT NULL,
    resource_id    text        NOT NULL,
    state          text        NOT NULL DEFAULT 'QUEUED' CHECK (state IN ('QUEUED', 'RUNNING', 'DONE', 'FAILED')),
    cursor         text,
    items          bigint      NOT NULL DEFAULT 0,
    pages          bigint      NOT NULL DEFAULT 0,
    attempt        integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    lease_epoch    bigint      NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    leased_until   timestamptz,
    leased_by      text,
    due_at         timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    finished_at    timestamptz,
    last_error     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_sync_job_resource UNIQUE (connection_id, kind, resource_type, resource_id),
    CONSTRAINT ck_sync_job_leased CHECK ((state = 'RUNNING') = (leased_until IS NOT NULL)),
    CONSTRAINT ck_sync_job_ended CHECK ((state IN ('DONE', 'FAILED')) = (finished_at IS NOT NULL))
);
-- Claims look for due QUEUED jobs and expired RUNNING ones; progress reads one connection's.
CREATE INDEX ix_sync_job_claimable ON sync_job (due_at) WHERE state = 'QUEUED';
CREATE INDEX ix_sync_job_lease_expiry ON sync_job (leased_until) WHERE leased_until IS NOT NULL;
CREATE INDEX ix_sync_job_workspace ON sync_job (workspace_id, connection_id);

-- The subscription types that have a backfill (a provider that adds a sync source replaces
-- this function in its own migration). Subscriptions of other types get no job. A function,
-- not a table: the specs' truncation between specs must not empty it.
-- +goose StatementBegin
CREATE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'))
$$;
-- +goose StatementEnd

-- sync_provider_tears_down: the providers whose uninstalled connections get a teardown job (a
-- provider adding one replaces this function in its migration). Slack erases its team's data
-- in its own uninstall step (the seed), so it has none.
-- +goose StatementBegin
CREATE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT provider IN ('GITHUB')
$$;
-- +goose StatementEnd

-- sync_restart makes every backfill of a connection start again from the beginning: a missing
-- job is created for each subscription of a syncable type, and every existing one is QUEUED
-- with no cursor and zero counters. lease_epoch moves up, so a page a server is writing under
-- the old lease does not commit (its fence finds another epoch).
-- +goose StatementBegin
CREATE FUNCTION sync_restart(conn bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
    SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
    FROM connection_subscription s
    WHERE s.connection_id = conn AND sync_resource_syncable(s.provider, s.resource_type)
    ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;
    UPDATE sync_job SET state = 'QUEUED', cursor = NULL, items = 0, pages = 0, attempt = 0,
        lease_epoch = lease_epoch + 1, leased_until = NULL, leased_by = NULL, due_at = now(),
        started_at = NULL, finished_at = NULL, last_error = NULL
    WHERE connection_id = conn AND kind = 'BACKFILL';
$$;
-- +goose StatementEnd

-- A subscription added: its backfill job (kept when the set is replaced with the same
-- resource, which deletes and inserts the row in one transaction).
-- +goose StatementBegin
CREATE FUNCTION sync_subscription_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
    SELECT NEW.workspace_id, NEW.connection_id, NEW.provider, 'BACKFILL', NEW.resource_type, NEW.resource_id
    WHERE sync_resource_syncable(NEW.provider, NEW.resource_type)
    ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tg_sync_subscription_added AFTER INSERT ON connection_subscription
    FOR EACH ROW EXECUTE FUNCTION sync_subscription_added();

-- A subscription removed: its job goes at commit, unless the transaction inserted the resource
-- again (a replaced set that keeps it), so only a resource added later backfills anew.
-- +goose StatementBegin
CREATE FUNCTION sync_subscription_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM sync_job j
    WHERE j.connection_id = OLD.connection_id AND j.kind = 'BACKFILL'
      AND j.resource_type = OLD.resource_type AND j.resource_id = OLD.resource_id
      AND NOT EXISTS (SELECT 1 FROM connection_subscription s
                      WHERE s.connection_id = OLD.connection_id AND s.resource_type = OLD.resource_type
                        AND s.resource_id = OLD.resource_id);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE CONSTRAINT TRIGGER tg_sync_subscription_removed AFTER DELETE ON connection_subscription
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION sync_subscription_removed();

-- A connection's state changed, by whichever writer (the management API, the GitHub
-- installation handler, Slack's uninstall): in the same transaction, so the jobs follow the
-- committed state exactly.
--   ACTIVE again   every backfill starts again (sync_restart); a teardown not done is dropped.
--   SUSPENDED      running jobs are handed back (QUEUED, new epoch): nothing syncs meanwhile.
--   UNINSTALLED    the backfills are dropped and a teardown job is queued; it runs after
--                  this transaction commits, like any job.
-- +goose StatementBegin
CREATE FUNCTION sync_connection_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'ACTIVE' THEN
        DELETE FROM sync_job WHERE connection_id = NEW.id AND kind = 'TEARDOWN';
        PERFORM sync_restart(NEW.id);
    ELSIF NEW.state = 'SUSPENDED' THEN
        UPDATE sync_job SET state = 'QUEUED', lease_epoch = lease_epoch + 1, leased_until = NULL,
            leased_by = NULL, due_at = now()
        WHERE connection_id = NEW.id AND state = 'RUNNING';
    ELSIF NEW.state = 'UNINSTALLED' THEN
        DELETE FROM sync_job WHERE connection_id = NEW.id AND kind = 'BACKFILL';
        INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
        SELECT NEW.workspace_id, NEW.id, NEW.provider, 'TEARDOWN', 'connection', NEW.id::text
        WHERE sync_provider_tears_down(NEW.provider)
        ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO UPDATE SET state = 'QUEUED', cursor = NULL,
            items = 0, pages = 0, attempt = 0, lease_epoch = sync_job.lease_epoch + 1,
            leased_until = NULL, leased_by = NULL, due_at = now(), started_at = NULL,
            finished_at = NULL, last_error = NULL;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tg_sync_connection_state_changed AFTER UPDATE OF state ON connection
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION sync_connection_state_changed();

-- The mirror is complete from day one: subscriptions that exist now backfill once.
INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
FROM connection_subscription s
JOIN connection c ON c.id = s.connection_id AND c.state <> 'UNINSTALLED'
WHERE sync_resource_syncable(s.provider, s.resource_type)
ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;

-- +goose Down
DROP TRIGGER tg_sync_connection_state_changed ON connection;
DROP TRIGGER tg_sync_subscription_removed ON connection_subscription;
DROP TRIGGER tg_sync_subscription_added ON connection_subscription;
DROP FUNCTION sync_connection_state_changed();
DROP FUNCTION sync_subscription_removed();
DROP FUNCTION sync_subscription_added();
DROP FUNCTION sync_restart(bigint);
DROP FUNCTION sync_provider_tears_down(text);
DROP FUNCTION sync_resource_syncable(text, text);
DROP TABLE sync_job;
