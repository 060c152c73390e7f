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

-- A channel's history is mirrored only while it has consent, so a backfill that ran before the
-- app was added to the channel mirrored nothing: a channel whose consent becomes GRANTED (the
-- grant or resume step of the Slack handlers, in their transaction) backfills again from the
-- first page, as sync_restart does for a connection. The channel row is locked before the jobs
-- (the handler's FOR UPDATE); a page commit takes the channel's FOR SHARE before its job's fence
-- too (ports.SyncPage.Lock, adapters/slack/slacksync), so both lock in one order and cannot
-- deadlock.
-- +goose StatementBegin
CREATE FUNCTION sync_slack_channel_granted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sync_job SET state = 'QUEUED', cursor = NULL, items = 0, pages = 0, attempt = 0,
        lease_epoch = lease_epoch + 1, leased_until = NULL, leased_by = NULL, due_at = now(),
        started_at = NULL, finished_at = NULL, last_error = NULL
    WHERE workspace_id = NEW.workspace_id AND provider = 'SLACK' AND kind = 'BACKFILL'
      AND resource_type = 'channel' AND resource_id = NEW.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER tg_sync_slack_channel_granted AFTER INSERT ON slack_channel
    FOR EACH ROW WHEN (NEW.consent_state = 'GRANTED')
    EXECUTE FUNCTION sync_slack_channel_granted();
-- A rename of a consented channel (the same state written again) restarts nothing.
CREATE TRIGGER tg_sync_slack_channel_regranted AFTER UPDATE OF consent_state ON slack_channel
    FOR EACH ROW WHEN (NEW.consent_state = 'GRANTED' AND OLD.consent_state <> 'GRANTED')
    EXECUTE FUNCTION sync_slack_channel_granted();

INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
FROM connection_subscription s
JOIN connection c ON c.id = s.connection_id AND c.state <> 'UNINSTALLED'
WHERE (s.provider, s.resource_type) IN (('SLACK', 'channel'))
ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;

-- +goose Down
DROP TRIGGER tg_sync_slack_channel_regranted ON slack_channel;
DROP TRIGGER tg_sync_slack_channel_granted ON slack_channel;
DROP FUNCTION sync_slack_channel_granted();
DELETE FROM sync_job WHERE provider = 'SLACK';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'))
$$;
-- +goose StatementEnd
