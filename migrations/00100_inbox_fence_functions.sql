-- Issue 39: a fenced write transaction of the delivery inbox (adapters/postgres/deliveryinbox)
-- in fewer round trips, with the same statements, locks and order as before. The two functions
-- run the fence's statements inside the caller's transaction; the adapter judges what they
-- observed with erasure.Fence.Check, as it did when it sent each statement on its own.
--
-- inbox_fence_open is steps 2 to 5 of the fenced transaction, sent with BEGIN in one round trip:
--   2. copy admission: FOR KEY SHARE OF the erasure copy fence SKIP LOCKED, and the event's
--      workspace id; a skipped fence row is erasure in progress (a missing one is an error);
--   3. workspace fence: FOR KEY SHARE SKIP LOCKED on the event's workspace;
--   4. event fence: FOR KEY SHARE SKIP LOCKED on the event row, reading state and epoch;
--   5. for a step (p_step not NULL): INSERT … ON CONFLICT DO NOTHING of the step row, only
--      when the fences observed what Fence.Check passes (no erasure, workspace and event row
--      taken, LEASED under p_epoch): a claim is never attempted under a fence that fails, so
--      the step insert's foreign key never waits on a row erasure or the reaper holds.
-- After the first fence it finds held it takes no further lock and reads, without a lock,
-- whether the skipped rows still exist (busy) or are gone (erased), as before.
--
-- inbox_fence_recheck is step 7, sent with COMMIT in one round trip: FOR SHARE SKIP LOCKED on
-- the event row, held through COMMIT. Anything but LEASED under p_epoch raises, which aborts the
-- transaction before its COMMIT runs (the step row with it); the SQLSTATE tells the adapter
-- what the recheck observed: HXF02 another lease (DETAIL: state and epoch), HXF03 the row is
-- held (busy), HXF04 the row is gone (erased), unless p_deletes_own (the transaction deleted
-- its own event on purpose).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION inbox_fence_open(p_event bigint, p_epoch bigint, p_step text,
    OUT erasure_in_progress boolean, OUT workspace_busy boolean, OUT event_exists boolean,
    OUT event_busy boolean, OUT event_state text, OUT event_epoch bigint,
    OUT step_attempted boolean, OUT step_claimed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_workspace bigint;
BEGIN
    erasure_in_progress := false;
    workspace_busy := false;
    event_exists := false;
    event_busy := false;
    step_attempted := false;
    step_claimed := false;

    SELECT f.in_progress, e.workspace_id INTO erasure_in_progress, v_workspace
    FROM inbox_erasure_fence f
    LEFT JOIN provider_event e ON e.id = p_event
    WHERE f.name = 'inbox'
    FOR KEY SHARE OF f SKIP LOCKED;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM inbox_erasure_fence WHERE name = 'inbox') THEN
            RAISE EXCEPTION 'the inbox_erasure_fence row ''inbox'' is missing; run the migrations'
                USING ERRCODE = 'HXF01';
        END IF;
        erasure_in_progress := true;
    END IF;
    IF erasure_in_progress THEN
        event_exists := EXISTS (SELECT 1 FROM provider_event WHERE id = p_event);
        RETURN;
    END IF;

    IF v_workspace IS NOT NULL THEN
        PERFORM 1 FROM workspace WHERE id = v_workspace FOR KEY SHARE SKIP LOCKED;
        IF NOT FOUND THEN
            event_exists := EXISTS (SELECT 1 FROM provider_event WHERE id = p_event);
            workspace_busy := EXISTS (SELECT 1 FROM workspace WHERE id = v_workspace);
            RETURN;
        END IF;
    END IF;

    SELECT e.state, e.lease_epoch INTO event_state, event_epoch
    FROM provider_event e WHERE e.id = p_event
    FOR KEY SHARE SKIP LOCKED;
    IF NOT FOUND THEN
        event_exists := EXISTS (SELECT 1 FROM provider_event WHERE id = p_event);
        event_busy := event_exists;
        RETURN;
    END IF;
    event_exists := true;

    IF p_step IS NOT NULL AND event_state = 'LEASED' AND event_epoch = p_epoch THEN
        step_attempted := true;
        INSERT INTO provider_event_step (event_id, step_name) VALUES (p_event, p_step)
        ON CONFLICT DO NOTHING;
        step_claimed := FOUND;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION inbox_fence_recheck(p_event bigint, p_epoch bigint, p_deletes_own boolean)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_epoch bigint;
BEGIN
    SELECT e.state, e.lease_epoch INTO v_state, v_epoch
    FROM provider_event e WHERE e.id = p_event
    FOR SHARE SKIP LOCKED;
    IF FOUND THEN
        IF v_state = 'LEASED' AND v_epoch = p_epoch THEN
            RETURN;
        END IF;
        RAISE EXCEPTION 'inbox fence: the event is under another lease'
            USING ERRCODE = 'HXF02', DETAIL = v_state || ' ' || v_epoch;
    END IF;
    IF EXISTS (SELECT 1 FROM provider_event WHERE id = p_event) THEN
        RAISE EXCEPTION 'inbox fence: the event row is held' USING ERRCODE = 'HXF03';
    END IF;
    IF p_deletes_own THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'inbox fence: the event row is gone' USING ERRCODE = 'HXF04';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION inbox_fence_recheck(bigint, bigint, boolean);
DROP FUNCTION inbox_fence_open(bigint, bigint, text);
