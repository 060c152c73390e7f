-- +goose Up

-- Every subscription is verified with its connection's own credential (issue 31): a GitLab
-- subscription is VERIFIED only after the connection's own API token (PUT …/api-token) read the
-- project or group. GitLab subscriptions stored before were never checked (any workspace could
-- name another tenant's project id, and a backfill read it with the instance-wide token), so
-- they stop routing and backfilling until a check verifies them: setting the connection's API
-- token checks every one of them (and the access recheck checks those whose connection has a
-- token). Until then a GitLab connection's webhooks reach no workspace row, which is the
-- seed's "GitLab deliveries must also match their connection's verified route".
UPDATE connection_subscription s
SET access = 'UNVERIFIED',
    access_reason = CASE WHEN c.api_token_ciphertext IS NULL THEN 'api-token-missing' ELSE 'not-yet-verified' END,
    access_checked_at = NULL
FROM connection c
WHERE c.id = s.connection_id AND c.kind = 'GITLAB' AND s.access = 'VERIFIED';
-- The update queued route-epoch bumps (deferred triggers); fire them now.
SET CONSTRAINTS ALL IMMEDIATE;

-- +goose Down
-- Nothing to undo: an UNVERIFIED subscription is verified again by a check, not by a rollback.
SELECT 1;
