-- +goose Up

-- Tenant isolation (issue 12): a subscription carries whether the provider vouches for the
-- workspace's access to the resource, so admission decides on database state alone and never
-- asks a provider while it holds lifecycle locks.
--
--   VERIFIED    the provider vouches: an App connection's installation (checked at admission, by
--               the signed installation id), or a GITHUB_PAT whose token read the resource when the
--               subscription was set or at the last recheck;
--   UNVERIFIED  not checked yet (a PAT connection without a token, or one from before this
--               migration); it receives nothing until a check verifies it;
--   REVOKED     the last check was refused by the provider; access_reason says why.
--
-- Only VERIFIED subscriptions route deliveries (ix_connection_subscription_route is partial on it).
ALTER TABLE connection_subscription
    ADD COLUMN access            text        NOT NULL DEFAULT 'VERIFIED'
        CHECK (access IN ('VERIFIED', 'UNVERIFIED', 'REVOKED')),
    ADD COLUMN access_reason     text,
    ADD COLUMN access_checked_at timestamptz;

-- The routes statement reads only subscriptions that may route, by resource.
DROP INDEX ix_connection_subscription_route;
CREATE INDEX ix_connection_subscription_route ON connection_subscription (provider, resource_type, resource_id)
    WHERE access = 'VERIFIED';

-- Existing PAT subscriptions were never checked with a token: they stop receiving until one is
-- (the access recheck verifies those whose connection has a token; the others need a token).
UPDATE connection_subscription s
SET access = 'UNVERIFIED',
    access_reason = CASE WHEN c.secret_ciphertext IS NULL THEN 'token-missing' ELSE 'not-yet-verified' END
FROM connection c
WHERE c.id = s.connection_id AND c.kind = 'GITHUB_PAT';
-- The update queued route-epoch bumps (deferred triggers); fire them now, so the rest of the
-- migration's transaction may still change the table.
SET CONSTRAINTS ALL IMMEDIATE;

-- The access recheck runs on one server at a time, like retention.
INSERT INTO singleton_lease (name) VALUES ('access-recheck') ON CONFLICT (name) DO NOTHING;

-- +goose Down
DELETE FROM singleton_lease WHERE name = 'access-recheck';
DROP INDEX ix_connection_subscription_route;
CREATE INDEX ix_connection_subscription_route ON connection_subscription (provider, resource_type, resource_id);
ALTER TABLE connection_subscription DROP COLUMN access_checked_at, DROP COLUMN access_reason, DROP COLUMN access;
