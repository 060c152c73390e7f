-- +goose Up

-- The rejection log (issue 35 point 4, CONTRACT.md "Operator API"): refused webhook requests
-- counted per minute by (provider, connection, reason). Each server counts in memory (a bounded
-- number of keys) and adds its counts once a minute with one statement, so a flood of
-- unauthenticated requests is never a write per request. connection_id is 0 when no connection
-- matched (or was named); it is not a foreign key: the log outlives a deleted connection and is
-- shown to a workspace only through its current connections. Rows older than
-- HEPHAESTUS_REJECTIONS_RETENTION (default 7 days) are deleted by the flush.
CREATE TABLE webhook_rejection (
    minute         timestamptz NOT NULL,
    provider       text        NOT NULL,
    connection_id  bigint      NOT NULL DEFAULT 0,
    reason         text        NOT NULL,
    count          bigint      NOT NULL CHECK (count > 0),
    PRIMARY KEY (minute, provider, connection_id, reason)
);
-- A workspace's rejections: its connections' rows, newest minute first.
CREATE INDEX ix_webhook_rejection_connection ON webhook_rejection (connection_id, minute DESC);

-- +goose Down
DROP TABLE webhook_rejection;
