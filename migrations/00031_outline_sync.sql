-- +goose Up

-- Outline collections are backfilled too (adapters/outline/outlinesync: POST documents.list of
-- the collection, offset pages), with an Outline API key the connection may hold besides its
-- webhook signing secret: api_token_ciphertext, sealed with the credentials key for the
-- connection like secret_ciphertext (never shown, re-sealed by rotate-credentials). Collection
-- subscriptions get sync jobs from now on and the existing ones backfill once; an uninstalled
-- Outline connection gets a teardown job.
ALTER TABLE connection ADD COLUMN api_token_ciphertext bytea;

-- The two functions are extended, not restated: the current ones (whatever the migrations before
-- this one made them name) are kept under another name and the new ones add Outline to their
-- answer, so this migration composes with any other provider's that ran before it.
ALTER FUNCTION sync_resource_syncable(text, text) RENAME TO sync_resource_syncable_before_outline;
ALTER FUNCTION sync_provider_tears_down(text) RENAME TO sync_provider_tears_down_before_outline;
-- +goose StatementBegin
CREATE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT sync_resource_syncable_before_outline(provider, resource_type)
        OR (provider, resource_type) = ('OUTLINE', 'collection')
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT sync_provider_tears_down_before_outline(provider) OR provider = 'OUTLINE'
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
DROP FUNCTION sync_provider_tears_down(text);
DROP FUNCTION sync_resource_syncable(text, text);
ALTER FUNCTION sync_provider_tears_down_before_outline(text) RENAME TO sync_provider_tears_down;
ALTER FUNCTION sync_resource_syncable_before_outline(text, text) RENAME TO sync_resource_syncable;
ALTER TABLE connection DROP COLUMN api_token_ciphertext;
