-- +goose Up

-- GitLab groups are backfilled too (adapters/gitlab/gitlabsync: each project of the group, its
-- subgroups' included): their subscriptions get sync jobs from now on, and the existing ones
-- backfill once.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'),
        ('GITLAB', 'group'), ('SLACK', 'channel'))
$$;
-- +goose StatementEnd

-- A project that a group subscription's backfill found among the group's projects. A subgroup's
-- project has the subgroup as its namespace, so without this row teardown could not tell that
-- the subscription of the group above brought it (gitlabmirror/teardown.go). No person data.
CREATE TABLE gitlab_group_project (
    workspace_id bigint NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    group_id     bigint NOT NULL,
    project_id   bigint NOT NULL,
    PRIMARY KEY (workspace_id, group_id, project_id)
);
CREATE INDEX ix_gitlab_group_project_project ON gitlab_group_project (workspace_id, project_id);

INSERT INTO sync_job (workspace_id, connection_id, provider, kind, resource_type, resource_id)
SELECT s.workspace_id, s.connection_id, s.provider, 'BACKFILL', s.resource_type, s.resource_id
FROM connection_subscription s
JOIN connection c ON c.id = s.connection_id AND c.state <> 'UNINSTALLED'
WHERE (s.provider, s.resource_type) IN (('GITLAB', 'group'))
ON CONFLICT ON CONSTRAINT uq_sync_job_resource DO NOTHING;

-- +goose Down
DELETE FROM sync_job WHERE provider = 'GITLAB' AND resource_type = 'group';
DROP TABLE gitlab_group_project;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_resource_syncable(provider text, resource_type text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT (provider, resource_type) IN (('GITHUB', 'repository'), ('GITHUB', 'organization'), ('GITLAB', 'project'),
        ('SLACK', 'channel'))
$$;
-- +goose StatementEnd
