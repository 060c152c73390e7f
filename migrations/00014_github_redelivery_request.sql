-- +goose Up

-- The redelivery reconciler's durable record: one row per GitHub delivery guid it asked GitHub
-- to redeliver, so it asks at most once per guid, on any server and across restarts. The row is
-- inserted (ON CONFLICT DO NOTHING) before the request and removed only when the request
-- failed, so two servers never both ask for one guid. Rows older than GitHub's redelivery
-- window are of no use and are deleted by the reconciler.
CREATE TABLE github_redelivery_request (
    guid          text        PRIMARY KEY,
    delivery_id   bigint      NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ix_github_redelivery_request_at ON github_redelivery_request (requested_at);

-- +goose Down
DROP TABLE github_redelivery_request;
