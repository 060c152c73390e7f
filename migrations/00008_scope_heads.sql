-- +goose Up

-- The scope heads: one row per scope that has a QUEUED or LEASED row, with the id of its oldest
-- such row (its head). The claim walks this table in head order and looks at each scope's head,
-- so its cost depends on the scopes it passes over, never on the rows waiting behind a blocked
-- head (issue 20: a hot scope of 500,000 rows behind a head waiting for its retry made every
-- claim walk all of them).
--
-- The table is an index, not a source of truth: the claim finds each visited scope's head in
-- provider_event itself and checks every order rule on provider_event, so a head_id that lags
-- only changes which free scope is served first. What must hold for liveness is membership:
-- every scope with a QUEUED row has a row here. The triggers below keep it with every writer of
-- provider_event (admission, outcomes, reaping, release, replay, erasure, retention, cascades):
--
--   * adding a row to a scope's QUEUED/LEASED set (insert, replay) takes the scope's maintenance
--     latch in shared mode until commit, then creates the scope row or lowers its head_id;
--   * removing one (DONE, DEAD, delete) tries the latch in exclusive mode without waiting and,
--     when it gets it, recomputes the head from a snapshot taken after the latch, deleting the
--     scope row when nothing is left. An adder still in flight holds the latch, so the remover
--     never deletes the row of a scope whose new row it cannot see yet; when the latch is busy,
--     the remover leaves the row as it is (the claim then finds the real head itself).
--
-- The latch is a transaction-scoped advisory lock on (20260008, hashtext(scope_key)): it is
-- held from the insert to the commit of one short transaction, never across a handler, and it
-- lives in memory, so the admission insert writes no lock into a shared row. Adders only wait
-- for a remover that holds it (never for each other); removers never wait, so the latch cannot
-- take part in a deadlock. A hash collision between two scopes only makes one wait or skip.
-- The removal's snapshot argument needs READ COMMITTED (every writer of the inbox runs at it);
-- at another isolation level the remover leaves the row alone.
CREATE TABLE provider_event_scope (
    scope_key  text   PRIMARY KEY,
    head_id    bigint NOT NULL
);
-- The claim walks heads in id order: the oldest head first, as the seed orders the inbox.
CREATE INDEX ix_provider_event_scope_head ON provider_event_scope (head_id, scope_key);

-- +goose StatementBegin
CREATE FUNCTION provider_event_scope_add(k text, row_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(20260008, hashtext(k));
    -- From here on a remover of this scope waits for our commit; each statement below reads a
    -- snapshot taken after the latch, so it sees what a remover committed before.
    INSERT INTO provider_event_scope (scope_key, head_id) VALUES (k, row_id)
    ON CONFLICT (scope_key) DO NOTHING;
    IF NOT FOUND THEN
        -- Usually a no-op (the scope's head is older). It lowers the head for a replayed row
        -- and for an insert whose id is older than a concurrent insert that created the row.
        UPDATE provider_event_scope SET head_id = row_id WHERE scope_key = k AND head_id > row_id;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION provider_event_scope_remove(k text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    next_head bigint;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed'
       OR NOT pg_try_advisory_xact_lock(20260008, hashtext(k)) THEN
        RETURN;
    END IF;
    -- The row comparison with ORDER BY (scope_key, id) can only be answered by
    -- ix_provider_event_queued_scope, whatever the statistics say.
    SELECT least(
        (SELECT q.id FROM (
             SELECT q.scope_key, q.id FROM provider_event q
             WHERE q.state = 'QUEUED' AND (q.scope_key, q.id) > (k, 0)
             ORDER BY q.scope_key, q.id LIMIT 1) q
         WHERE q.scope_key = k),
        (SELECT l.id FROM provider_event l WHERE l.scope_key = k AND l.state = 'LEASED'))
    INTO next_head;
    IF next_head IS NULL THEN
        DELETE FROM provider_event_scope WHERE scope_key = k;
    ELSE
        UPDATE provider_event_scope SET head_id = next_head WHERE scope_key = k AND head_id <> next_head;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION provider_event_scope_track() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.state IN ('QUEUED', 'LEASED') THEN
        PERFORM provider_event_scope_remove(OLD.scope_key);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.state IN ('QUEUED', 'LEASED') THEN
        PERFORM provider_event_scope_add(NEW.scope_key, NEW.id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION provider_event_scope_reset() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- DELETE, not TRUNCATE: the truncation that fired this may name this table too.
    DELETE FROM provider_event_scope;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The WHEN clauses keep the functions off the hot paths that do not change a scope's
-- QUEUED/LEASED set: a claim (QUEUED to LEASED), a retry or release (LEASED to QUEUED), a lease
-- renewal, and retention deleting DONE and DEAD rows.
CREATE TRIGGER tr_provider_event_scope_insert AFTER INSERT ON provider_event
    FOR EACH ROW WHEN (NEW.state IN ('QUEUED', 'LEASED'))
    EXECUTE FUNCTION provider_event_scope_track();
CREATE TRIGGER tr_provider_event_scope_update AFTER UPDATE OF state, scope_key ON provider_event
    FOR EACH ROW WHEN ((OLD.state IN ('QUEUED', 'LEASED')) <> (NEW.state IN ('QUEUED', 'LEASED'))
                       OR OLD.scope_key <> NEW.scope_key)
    EXECUTE FUNCTION provider_event_scope_track();
CREATE TRIGGER tr_provider_event_scope_delete AFTER DELETE ON provider_event
    FOR EACH ROW WHEN (OLD.state IN ('QUEUED', 'LEASED'))
    EXECUTE FUNCTION provider_event_scope_track();
CREATE TRIGGER tr_provider_event_scope_truncate AFTER TRUNCATE ON provider_event
    FOR EACH STATEMENT EXECUTE FUNCTION provider_event_scope_reset();

INSERT INTO provider_event_scope (scope_key, head_id)
SELECT scope_key, min(id) FROM provider_event WHERE state IN ('QUEUED', 'LEASED') GROUP BY scope_key;

-- The claim no longer walks QUEUED rows in id order; nothing else reads this index, and
-- admission no longer pays for it.
DROP INDEX ix_provider_event_queued;

-- +goose Down
CREATE INDEX ix_provider_event_queued ON provider_event (id) WHERE state = 'QUEUED';
DROP TRIGGER tr_provider_event_scope_truncate ON provider_event;
DROP TRIGGER tr_provider_event_scope_delete ON provider_event;
DROP TRIGGER tr_provider_event_scope_update ON provider_event;
DROP TRIGGER tr_provider_event_scope_insert ON provider_event;
DROP FUNCTION provider_event_scope_reset();
DROP FUNCTION provider_event_scope_track();
DROP FUNCTION provider_event_scope_remove(text);
DROP FUNCTION provider_event_scope_add(text, bigint);
DROP TABLE provider_event_scope;
