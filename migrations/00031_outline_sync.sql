-- +goose Up

-- Outline collections are backfilled too (adapters/outline/outlinesync: POST documents.list of
-- the collection, offset pages), with an Outline API key the connection may hold besides its
-- webhook signing secret: api_token_ciphertext, sealed with the credentials key for the
-- connection like secret_ciphertext (never shown, re-sealed by rotate-credentials). Collection
-- subscriptions get sync jobs from now on and the existing ones backfill once; an uninstalled
-- Outline connection gets a teardown job.
ALTER TABLE connection ADD COLUMN api_token_ciphertext bytea;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'),
        ('SLACK', 'channel'), ('OUTLINE', 'collection'))
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT provider IN ('GITHUB', 'GITLAB', 'OUTLINE')
$$;
-- +goose StatementEnd

INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
FROM connection_subscription s
JOIN connection c ON c.id = s.connection_id AND c.state <> 'UNINSTALLED'
WHERE (s.provider, s.resource_type) IN (('OUTLINE', 'collection'))
ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;

-- +goose Down
DELETE FROM sync_job WHERE provider = 'OUTLINE';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT provider IN ('GITHUB', 'GITLAB')
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'),
        ('SLACK', 'channel'))
$$;
-- +goose StatementEnd
ALTER TABLE connection DROP COLUMN api_token_ciphertext;
