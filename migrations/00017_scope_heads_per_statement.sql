-- +goose Up

-- Scope heads kept once per UPDATE statement instead of once per row (issue 20, dispatch
-- regression). Migration 00008's row trigger ran provider_event_scope_remove for every row an
-- outcome write ended: a plpgsql call, a latch, two probes and an update per row, which made a
-- batch of 32 completions cost about twice the claim that leased them. This trigger reads the
-- statement's transition tables and does the same work once per statement, for all the scopes
-- it touched together: one statement takes their latches, the next (a fresh READ COMMITTED
-- snapshot, taken after the latches) recomputes their heads, deletes the emptied scopes and
-- moves the others' heads. Then it adds what entered the QUEUED/LEASED set (a replay, a
-- scope change) with provider_event_scope_add, as before.
--
-- The protocol of 00008 is unchanged: adders hold the scope's latch in shared mode until
-- commit, removers try it in exclusive mode without waiting and leave a scope whose latch is
-- busy as it is (the retention sweep repairs it); the recompute reads a snapshot taken after
-- the latch. Removers never wait for a latch, so the latch takes part in no deadlock.
--
-- A trigger with transition tables cannot name columns, so this one fires for every UPDATE
-- statement of the inbox (claims, renewals, releases too): those find no row that left or
-- entered the set and return after one scan of their transition tables.

-- +goose StatementBegin
CREATE FUNCTION provider_event_scope_track_statement() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    removed text[];
    latched text[];
BEGIN
    SELECT array_agg(DISTINCT o.scope_key ORDER BY o.scope_key) INTO removed
    FROM old_rows o JOIN new_rows n ON n.id = o.id
    WHERE o.state IN ('QUEUED', 'LEASED')
      AND (n.state NOT IN ('QUEUED', 'LEASED') OR n.scope_key <> o.scope_key);

    IF removed IS NOT NULL AND current_setting('transaction_isolation') = 'read committed' THEN
        -- One statement takes the latches; the statements below read snapshots taken after it.
        SELECT array_agg(k ORDER BY k) INTO latched
        FROM unnest(removed) k
        WHERE pg_try_advisory_xact_lock(20260008, hashtext(k));

        IF latched IS NOT NULL THEN
            -- The next head of each latched scope: its oldest QUEUED row (one descent of
            -- ix_provider_event_queued_scope, whatever the statistics say, as in 00008) or its
            -- LEASED row, whichever is older.
            WITH next_head AS MATERIALIZED (
                SELECT k, least(
                    (SELECT q.id FROM (
                         SELECT q.scope_key, q.id FROM provider_event q
                         WHERE q.state = 'QUEUED' AND (q.scope_key, q.id) > (k, 0)
                         ORDER BY q.scope_key, q.id LIMIT 1) q
                     WHERE q.scope_key = k),
                    (SELECT l.id FROM provider_event l WHERE l.scope_key = k AND l.state = 'LEASED')) AS head_id
                FROM unnest(latched) k
            ), emptied AS (
                DELETE FROM provider_event_scope s
                USING next_head x
                WHERE s.scope_key = x.k AND x.head_id IS NULL
            )
            UPDATE provider_event_scope s SET head_id = x.head_id
            FROM next_head x
            WHERE s.scope_key = x.k AND x.head_id IS NOT NULL AND s.head_id <> x.head_id;
        END IF;
    END IF;

    PERFORM provider_event_scope_add(n.scope_key, n.id)
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.state IN ('QUEUED', 'LEASED')
      AND (o.state NOT IN ('QUEUED', 'LEASED') OR o.scope_key <> n.scope_key)
    ORDER BY n.scope_key, n.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER tr_provider_event_scope_update ON provider_event;
CREATE TRIGGER tr_provider_event_scope_update_statement AFTER UPDATE ON provider_event
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION provider_event_scope_track_statement();

-- +goose Down
DROP TRIGGER tr_provider_event_scope_update_statement ON provider_event;
DROP FUNCTION provider_event_scope_track_statement();
CREATE TRIGGER tr_provider_event_scope_update AFTER UPDATE OF state, scope_key ON provider_event
    FOR EACH ROW WHEN ((OLD.state IN ('QUEUED', 'LEASED')) <> (NEW.state IN ('QUEUED', 'LEASED'))
                       OR OLD.scope_key <> NEW.scope_key)
    EXECUTE FUNCTION provider_event_scope_track();
