-- +goose Up

-- The GitLab, Slack and Outline mirrors: what their handlers copy out of subscribed events,
-- per workspace. The conventions of 00005 (the GitHub mirror) hold here too:
--
-- Keys. Every table is keyed by its workspace first and the provider's natural key after it
-- (GitLab's numeric ids, a commit's project and SHA; a Slack channel id and message ts; an
-- Outline UUID), and its workspace is a foreign key with ON DELETE CASCADE. Mirror rows name
-- each other by provider id without foreign keys: a mirror is filled in scope order, not in
-- dependency order, so a note can arrive for a merge request that was never mirrored.
--
-- Versions. A row carries the version that wrote it, (source_updated_at, source_event_id): the
-- provider's own timestamp of the object ('-infinity' when it gives none) and the inbox row whose
-- handler wrote it (0 outside dispatch). An upsert applies only when its version is not older:
--     ON CONFLICT … DO UPDATE … WHERE (excluded.source_updated_at, excluded.source_event_id)
--                                   >= (t.source_updated_at, t.source_event_id)
-- so an older event never overwrites newer data, an equal timestamp is decided by the
-- later-admitted delivery, and a retry or replay of the same delivery writes the same state.
-- Deletions are versioned tombstones (deleted = true) that a late older event cannot undo.

------------------------------------------------------------------------------------------------
-- GitLab
------------------------------------------------------------------------------------------------

CREATE TABLE gitlab_group (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    parent_id          bigint,
    name               text        NOT NULL DEFAULT '',
    path               text        NOT NULL DEFAULT '',
    full_path          text        NOT NULL DEFAULT '',
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- monitored is the project-event handler's monitor state: a destroyed project, or one that was
-- transferred out of the hooked group, stops being monitored; discovery by any later event of
-- the project (which admission only stores while the workspace subscribes) does not change it.
CREATE TABLE gitlab_project (
    workspace_id         bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                   bigint      NOT NULL,
    namespace_id         bigint,
    name                 text        NOT NULL DEFAULT '',
    path_with_namespace  text        NOT NULL DEFAULT '',
    web_url              text        NOT NULL DEFAULT '',
    default_branch       text        NOT NULL DEFAULT '',
    visibility           text        NOT NULL DEFAULT '',
    monitored            boolean     NOT NULL DEFAULT true,
    deleted              boolean     NOT NULL DEFAULT false,
    source_updated_at    timestamptz NOT NULL,
    source_event_id      bigint      NOT NULL,
    -- The monitor change has its own version: discovery writes must not move it.
    monitor_updated_at   timestamptz NOT NULL DEFAULT '-infinity',
    monitor_event_id     bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_gitlab_project_list ON gitlab_project (workspace_id, path_with_namespace, id) WHERE NOT deleted;

-- A member of a group or a project (source_type 'group' or 'project').
CREATE TABLE gitlab_member (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    source_type        text        NOT NULL CHECK (source_type IN ('group', 'project')),
    source_id          bigint      NOT NULL,
    user_id            bigint      NOT NULL,
    username           text        NOT NULL DEFAULT '',
    access_level       text        NOT NULL DEFAULT '',
    expires_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, source_type, source_id, user_id)
);

CREATE TABLE gitlab_milestone (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    project_id         bigint,
    group_id           bigint,
    iid                integer     NOT NULL DEFAULT 0,
    title              text        NOT NULL DEFAULT '',
    description        text,
    state              text        NOT NULL DEFAULT '',
    due_date           date,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE gitlab_issue (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    project_id         bigint      NOT NULL,
    iid                integer     NOT NULL,
    title              text        NOT NULL DEFAULT '',
    description        text,
    state              text        NOT NULL DEFAULT '',
    author_id          bigint,
    milestone_id       bigint,
    labels             text[]      NOT NULL DEFAULT '{}',
    web_url            text        NOT NULL DEFAULT '',
    created_at         timestamptz,
    closed_at          timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- The readiness columns are written by their own step (after provider reads outside any
-- transaction) and carry their own version, so the event write and the readiness write cannot
-- overwrite each other's newer data.
CREATE TABLE gitlab_merge_request (
    workspace_id          bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                    bigint      NOT NULL,
    project_id            bigint      NOT NULL,
    iid                   integer     NOT NULL,
    title                 text        NOT NULL DEFAULT '',
    description           text,
    state                 text        NOT NULL DEFAULT '',
    draft                 boolean     NOT NULL DEFAULT false,
    source_branch         text        NOT NULL DEFAULT '',
    target_branch         text        NOT NULL DEFAULT '',
    head_sha              text        NOT NULL DEFAULT '',
    merge_status          text        NOT NULL DEFAULT '',
    author_id             bigint,
    web_url               text        NOT NULL DEFAULT '',
    created_at            timestamptz,
    merged_at             timestamptz,
    closed_at             timestamptz,
    deleted               boolean     NOT NULL DEFAULT false,
    source_updated_at     timestamptz NOT NULL,
    source_event_id       bigint      NOT NULL,
    ready                 boolean,
    readiness_reason      text        NOT NULL DEFAULT '',
    approvals_left        integer,
    readiness_updated_at  timestamptz NOT NULL DEFAULT '-infinity',
    readiness_event_id    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_gitlab_merge_request_project ON gitlab_merge_request (workspace_id, project_id, iid) WHERE NOT deleted;

CREATE TABLE gitlab_note (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    project_id         bigint      NOT NULL,
    noteable_type      text        NOT NULL DEFAULT '',
    noteable_id        bigint,
    commit_sha         text,
    author_id          bigint,
    body               text,
    system             boolean     NOT NULL DEFAULT false,
    web_url            text        NOT NULL DEFAULT '',
    created_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE gitlab_pipeline (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    project_id         bigint      NOT NULL,
    ref                text        NOT NULL DEFAULT '',
    sha                text        NOT NULL DEFAULT '',
    status             text        NOT NULL DEFAULT '',
    source             text        NOT NULL DEFAULT '',
    merge_request_id   bigint,
    created_at         timestamptz,
    finished_at        timestamptz,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- One push as GitLab delivered it (the "push.persist" step); its commits are written one step
-- each into gitlab_commit.
CREATE TABLE gitlab_push (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    project_id         bigint      NOT NULL,
    ref                text        NOT NULL,
    after_sha          text        NOT NULL,
    before_sha         text        NOT NULL DEFAULT '',
    user_id            bigint,
    commit_count       integer     NOT NULL DEFAULT 0,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, project_id, ref, after_sha)
);

-- A commit is immutable once written (its SHA is its content): a second write of the same
-- commit is ON CONFLICT DO NOTHING and changes no row.
CREATE TABLE gitlab_commit (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    project_id         bigint      NOT NULL,
    sha                text        NOT NULL,
    title              text        NOT NULL DEFAULT '',
    message            text        NOT NULL DEFAULT '',
    author_name        text        NOT NULL DEFAULT '',
    author_email       text        NOT NULL DEFAULT '',
    authored_at        timestamptz,
    url                text        NOT NULL DEFAULT '',
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, project_id, sha)
);

------------------------------------------------------------------------------------------------
-- Slack
------------------------------------------------------------------------------------------------

-- The channel registry: a channel's messages are stored only while its consent_state is
-- GRANTED (the app was added to the channel). PENDING: created, the app not in it; PAUSED:
-- archived; REVOKED: deleted or the app removed (its messages are erased with the revoke).
CREATE TABLE slack_channel (
    workspace_id     bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    team_id          text        NOT NULL,
    id               text        NOT NULL,
    name             text        NOT NULL DEFAULT '',
    consent_state    text        NOT NULL CHECK (consent_state IN ('PENDING', 'GRANTED', 'PAUSED', 'REVOKED')),
    consent_changed_at timestamptz NOT NULL DEFAULT now(),
    source_event_id  bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_slack_channel_team ON slack_channel (workspace_id, team_id);

-- Every registration, pause, resume, revoke and rename, written in the step that made it.
CREATE TABLE slack_channel_audit (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id     bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    team_id          text        NOT NULL,
    channel_id       text        NOT NULL,
    action           text        NOT NULL,
    consent_state    text        NOT NULL,
    source_event_id  bigint      NOT NULL,
    at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ix_slack_channel_audit ON slack_channel_audit (workspace_id, channel_id, id);

-- A channel message. ts is Slack's message id within its channel. edited_ts is the version of
-- the text: an edit applies only when it is newer than the stored one. A deletion keeps a
-- tombstone without text, so a late insert or edit cannot bring the message back.
CREATE TABLE slack_message (
    workspace_id     bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    team_id          text        NOT NULL,
    channel_id       text        NOT NULL,
    ts               text        NOT NULL,
    thread_ts        text,
    user_id          text,
    text             text        NOT NULL DEFAULT '',
    edited_ts        text,
    deleted          boolean     NOT NULL DEFAULT false,
    posted_at        timestamptz,
    source_event_id  bigint      NOT NULL,
    PRIMARY KEY (workspace_id, channel_id, ts)
);
CREATE INDEX ix_slack_message_team ON slack_message (workspace_id, team_id);

-- Mentor conversation turns from direct messages. request_id is the turn's natural
-- idempotency key (the message's client_msg_id, else its ts); it lives here, never in a step
-- name. A redelivered submission finds its turn and adds none.
CREATE TABLE slack_mentor_turn (
    workspace_id     bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    team_id          text        NOT NULL,
    request_id       text        NOT NULL,
    channel_id       text        NOT NULL,
    user_id          text,
    ts               text        NOT NULL,
    thread_ts        text,
    text             text        NOT NULL DEFAULT '',
    state            text        NOT NULL CHECK (state IN ('SUBMITTED', 'EDITED', 'DELETED', 'STOPPED')),
    edited_ts        text,
    source_event_id  bigint      NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, team_id, request_id)
);
CREATE INDEX ix_slack_mentor_turn_channel ON slack_mentor_turn (workspace_id, team_id, channel_id);

------------------------------------------------------------------------------------------------
-- Outline
------------------------------------------------------------------------------------------------

CREATE TABLE outline_collection (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 text        NOT NULL,
    name               text        NOT NULL DEFAULT '',
    description        text,
    url_id             text        NOT NULL DEFAULT '',
    archived           boolean     NOT NULL DEFAULT false,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- A document's version is (source_updated_at, revision): the handler's fast path skips the
-- mirror write when the stored document is already at the delivered version.
CREATE TABLE outline_document (
    workspace_id        bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                  text        NOT NULL,
    collection_id       text,
    parent_document_id  text,
    title               text        NOT NULL DEFAULT '',
    text                text        NOT NULL DEFAULT '',
    url_id              text        NOT NULL DEFAULT '',
    revision            bigint      NOT NULL DEFAULT 0,
    published_at        timestamptz,
    archived_at         timestamptz,
    deleted             boolean     NOT NULL DEFAULT false,
    source_updated_at   timestamptz NOT NULL,
    source_event_id     bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_outline_document_list ON outline_document (workspace_id, source_updated_at DESC, id) WHERE NOT deleted;

-- The record of each Outline event, by its envelope id (the delivery key). Written in its own
-- step after the mirror write; ON CONFLICT DO NOTHING keeps a second recording out.
CREATE TABLE outline_event (
    workspace_id     bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    delivery_id      text        NOT NULL,
    event            text        NOT NULL,
    model_id         text,
    actor_id         text,
    occurred_at      timestamptz,
    source_event_id  bigint      NOT NULL,
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, delivery_id)
);

-- +goose Down
DROP TABLE outline_event;
DROP TABLE outline_document;
DROP TABLE outline_collection;
DROP TABLE slack_mentor_turn;
DROP TABLE slack_message;
DROP TABLE slack_channel_audit;
DROP TABLE slack_channel;
DROP TABLE gitlab_commit;
DROP TABLE gitlab_push;
DROP TABLE gitlab_pipeline;
DROP TABLE gitlab_note;
DROP TABLE gitlab_merge_request;
DROP TABLE gitlab_issue;
DROP TABLE gitlab_milestone;
DROP TABLE gitlab_member;
DROP TABLE gitlab_project;
DROP TABLE gitlab_group;
