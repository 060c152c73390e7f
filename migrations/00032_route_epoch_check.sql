-- +goose Up

-- route_epoch_moved ends an admission transaction whose routes were read in it when a
-- connection or subscription change committed after the routes statement's snapshot and
-- before the insert's: the routes it read no longer hold, the transaction must not store on
-- them, and the receiver reads them again in a new transaction. The insert's epoch guard calls
-- it, and only on a mismatch (see admissionstore's epochGuard). SQLSTATE 40001 is the
-- serialization failure that this is: a statement saw a snapshot a concurrent commit
-- invalidated. On remembered routes the guard stores nothing instead, as before.
-- +goose StatementBegin
CREATE FUNCTION route_epoch_moved() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'the routes changed after admission read them'
        USING ERRCODE = 'serialization_failure', HINT = 'Read the routes again.';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION route_epoch_moved();
