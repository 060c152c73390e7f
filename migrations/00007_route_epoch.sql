-- +goose Up

-- The route epoch: one number that changes whenever a connection or a subscription changes, in
-- the transaction that changes it. Admission remembers, per route, the connections it read
-- together with the epoch of the same snapshot, and may later admit from that memory in one
-- round trip: it locks the remembered connections (FOR SHARE NOWAIT) and inserts only when the
-- epoch in the insert's snapshot is still the remembered one, i.e. when nothing a route depends
-- on has committed a change since. Anything else falls back to reading the routes.
--
-- The bump is a deferred constraint trigger, so it runs at the writer's commit, after every lock
-- the writer takes: one row, updated last, cannot take part in a deadlock. The values come from a
-- sequence, so they never repeat, not even after the table is emptied.
CREATE SEQUENCE route_epoch_seq;

CREATE TABLE route_epoch (
    id    boolean PRIMARY KEY DEFAULT true CHECK (id),
    epoch bigint  NOT NULL
);
INSERT INTO route_epoch (epoch) VALUES (nextval('route_epoch_seq'));

-- +goose StatementBegin
CREATE FUNCTION bump_route_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO route_epoch (id, epoch) VALUES (true, nextval('route_epoch_seq'))
    ON CONFLICT (id) DO UPDATE SET epoch = EXCLUDED.epoch;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER tr_connection_route_epoch
    AFTER INSERT OR UPDATE OR DELETE ON connection
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_route_epoch();
CREATE CONSTRAINT TRIGGER tr_connection_subscription_route_epoch
    AFTER INSERT OR UPDATE OR DELETE ON connection_subscription
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_route_epoch();
CREATE TRIGGER tr_connection_truncate_route_epoch
    AFTER TRUNCATE ON connection FOR EACH STATEMENT EXECUTE FUNCTION bump_route_epoch();
CREATE TRIGGER tr_connection_subscription_truncate_route_epoch
    AFTER TRUNCATE ON connection_subscription FOR EACH STATEMENT EXECUTE FUNCTION bump_route_epoch();

-- +goose Down
DROP TRIGGER tr_connection_subscription_truncate_route_epoch ON connection_subscription;
DROP TRIGGER tr_connection_truncate_route_epoch ON connection;
DROP TRIGGER tr_connection_subscription_route_epoch ON connection_subscription;
DROP TRIGGER tr_connection_route_epoch ON connection;
DROP FUNCTION bump_route_epoch();
DROP TABLE route_epoch;
DROP SEQUENCE route_epoch_seq;
