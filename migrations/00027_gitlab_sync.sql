-- +goose Up

-- GitLab projects are backfilled too (adapters/gitlab/gitlabsync), and GitHub organizations (each
-- of their repositories, adapters/github/githubsync): their subscriptions get sync jobs from now
-- on, and the existing ones backfill once; an uninstalled GitLab connection gets a teardown job.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'))
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT provider IN ('GITHUB', 'GITLAB')
$$;
-- +goose StatementEnd

INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
FROM connection_subscription s
JOIN connection c ON c.id = s.connection_id AND c.state <> 'UNINSTALLED'
WHERE (s.provider, s.resource_type) IN (('GITLAB', 'project'), ('GITHUB', 'organization'))
ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;

-- +goose Down
DELETE FROM sync_job WHERE provider = 'GITLAB' OR (provider = 'GITHUB' AND resource_type = 'organization');
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT provider IN ('GITHUB')
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'))
$$;
-- +goose StatementEnd
