-- Issue 39: a shared mirror row written in the round trip that commits.
--
-- An organization row is written by every delivery of every repository of the organization,
-- across scopes that the claimers handle in parallel. The upsert's row lock is held until the
-- step commits, so the statements after it and their round trips were a serial chain through
-- that one row. The GitHub mirror reads the row first, without a lock; when the stored row
-- already says what the event says, it sends the upsert (which then only moves the version)
-- with the step's recheck and COMMIT, so the lock lasts one round trip. That upsert must not
-- change the row's content unseen, because a content change publishes a change-feed entry
-- built from the row as read in the step: mirror_write_unchanged raises when it did, which
-- aborts the transaction before its COMMIT runs, and the delivery is retried as contention
-- (serialization_failure); the retry reads the new row and writes the change the usual way.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION mirror_write_unchanged(p_changed boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF p_changed THEN
        RAISE EXCEPTION 'mirror: the row changed since the step read it; retry the step'
            USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mirror_write_unchanged(boolean);
