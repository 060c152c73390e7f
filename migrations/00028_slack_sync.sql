-- +goose Up

-- Slack channels are backfilled too (adapters/slack/slacksync: conversations.history of a channel
-- with consent): their subscriptions get sync jobs from now on, and the existing ones backfill
-- once. Slack keeps its own uninstall erase (the "slack.connection.uninstall" step), so
-- sync_provider_tears_down stays as it is: no teardown job for Slack.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'),
        ('SLACK', 'channel'))
$$;
-- +goose StatementEnd

INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
FROM connection_subscription s
JOIN connection c ON c.id = s.connection_id AND c.state <> 'UNINSTALLED'
WHERE (s.provider, s.resource_type) IN (('SLACK', 'channel'))
ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;

-- +goose Down
DELETE FROM sync_job WHERE provider = 'SLACK';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'))
$$;
-- +goose StatementEnd
