-- +goose Up

-- One live (not UNINSTALLED) connection per Slack team, enforced by the database like the one
-- live App connection per installation (uq_connection_installation): a team id in a signed
-- Slack body names one source, and a second connection naming another tenant's team would
-- receive that tenant's events.
--
-- Existing duplicates are reported and the newest live connection of each team is kept; the
-- others become UNINSTALLED (their rows, subscriptions and inbox rows stay).
-- +goose StatementBegin
DO $$
DECLARE
    d record;
BEGIN
    FOR d IN
        SELECT c.id, c.workspace_id, c.source_key, keep.id AS kept_id
        FROM connection c
        JOIN LATERAL (
            SELECT k.id FROM connection k
            WHERE k.kind = 'SLACK' AND k.state <> 'UNINSTALLED' AND k.source_key = c.source_key
            ORDER BY k.created_at DESC, k.id DESC
            LIMIT 1
        ) keep ON true
        WHERE c.kind = 'SLACK' AND c.state <> 'UNINSTALLED' AND c.source_key IS NOT NULL AND c.id <> keep.id
        ORDER BY c.source_key, c.id
    LOOP
        RAISE NOTICE 'duplicate live Slack connection % (workspace %) of team %: UNINSTALLED, connection % kept',
            d.id, d.workspace_id, d.source_key, d.kept_id;
        UPDATE connection SET state = 'UNINSTALLED', config_version = config_version + 1, updated_at = now()
        WHERE id = d.id;
    END LOOP;
END
$$;
-- +goose StatementEnd
-- The uninstalls queued route-epoch bumps (deferred triggers); fire them before the index, which
-- PostgreSQL refuses to build on a table with pending trigger events.
SET CONSTRAINTS ALL IMMEDIATE;

CREATE UNIQUE INDEX uq_connection_slack_team ON connection (source_key)
    WHERE kind = 'SLACK' AND state <> 'UNINSTALLED';

-- +goose Down
DROP INDEX uq_connection_slack_team;
