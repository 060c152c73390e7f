-- +goose Up

-- Person erasure rewrites the payloads of other people's deliveries row by row: a row whose
-- rewrite fails (a constraint, a trigger, a lock waited for too long, a payload the rewrite
-- refuses) is left as it was and the pass goes on. Its receipt lists the ids of such rows
-- (failed_rows, at most 1000, lowest first). While the last pass of a request left any, the
-- runner asks for one more pass on its own: retries counts those passes since the start or the
-- last resume, and retry_at is when a runner may take the request again (NULL: at once).
-- Constant defaults: no table rewrite.
ALTER TABLE inbox_erasure_receipt ADD COLUMN failed_rows bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE inbox_erasure
    ADD COLUMN retries integer NOT NULL DEFAULT 0 CHECK (retries >= 0),
    ADD COLUMN retry_at timestamptz;

-- +goose Down
ALTER TABLE inbox_erasure DROP COLUMN retry_at, DROP COLUMN retries;
ALTER TABLE inbox_erasure_receipt DROP COLUMN failed_rows;
