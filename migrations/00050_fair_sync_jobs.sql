-- +goose Up

-- The last time a job of each workspace was claimed: the claim takes, among the workspaces with
-- the fewest running jobs, the one whose turn came longest ago (never first), so workers go
-- round the workspaces instead of back to the one whose jobs are oldest
-- (adapters/postgres/syncjobs, claimDueSyncJob, which writes it in the same statement).
CREATE TABLE sync_workspace_turn (
    workspace_id bigint      PRIMARY KEY REFERENCES workspace (id) ON DELETE CASCADE,
    claimed_at   timestamptz NOT NULL
);

-- Repeated restarts of a connection's sync (POST …/connections/{id}/sync, repeated at will, or a
-- connection made ACTIVE again) coalesce into one pending job per resource: a job that is QUEUED
-- and has not started yet (no cursor, no page, no failed attempt) is left as it is, keeping its
-- place in the queue (due_at) and its lease epoch, instead of being queued anew behind everyone
-- else. Every other job starts again from its first page as before.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_restart(conn bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
    SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
    FROM connection_subscription s
    WHERE s.connection_id = conn AND sync_resource_syncable(s.provider, s.resource_type)
    ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;
    UPDATE sync_job SET state = 'QUEUED', cursor = NULL, items = 0, pages = 0, attempt = 0,
        lease_epoch = lease_epoch + 1, leased_until = NULL, leased_by = NULL, due_at = now(),
        started_at = NULL, finished_at = NULL, last_error = NULL
    WHERE connection_id = conn AND kind = 'BACKFILL'
      AND NOT (state = 'QUEUED' AND cursor IS NULL AND pages = 0 AND attempt = 0);
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE sync_workspace_turn;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_restart(conn bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
    SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
    FROM connection_subscription s
    WHERE s.connection_id = conn AND sync_resource_syncable(s.provider, s.resource_type)
    ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;
    UPDATE sync_job SET state = 'QUEUED', cursor = NULL, items = 0, pages = 0, attempt = 0,
        lease_epoch = lease_epoch + 1, leased_until = NULL, leased_by = NULL, due_at = now(),
        started_at = NULL, finished_at = NULL, last_error = NULL
    WHERE connection_id = conn AND kind = 'BACKFILL';
$$;
-- +goose StatementEnd
