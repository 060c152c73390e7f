-- +goose Up

-- The redelivery reconciler asks again, a bounded number of times and with growing spacing,
-- for a delivery whose redelivery failed too (GitHub does not retry on its own): attempts
-- counts the requests made for the guid, requested_at is the latest one.
ALTER TABLE github_redelivery_request
    ADD COLUMN attempts integer NOT NULL DEFAULT 1 CONSTRAINT ck_github_redelivery_request_attempts CHECK (attempts >= 1);

-- +goose Down
ALTER TABLE github_redelivery_request DROP COLUMN attempts;
