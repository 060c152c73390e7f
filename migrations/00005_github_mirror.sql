-- +goose Up

-- The GitHub mirror: what the GitHub handlers copy out of subscribed events, per workspace.
--
-- Keys. Every table is keyed by its workspace first and the provider's natural key after it
-- (GitHub's numeric id; a commit's repository and SHA; a review thread's node id), and its
-- workspace is a foreign key with ON DELETE CASCADE: deleting a workspace deletes its mirror.
-- Mirror rows name each other by provider id without foreign keys between them: a mirror is a
-- partial copy filled in scope order, not in dependency order (a comment can arrive for an issue
-- that was never mirrored), and a dangling reference is a fact about the provider, not an error.
--
-- Versions. Every row carries the version that wrote it: (source_updated_at, source_event_id),
-- the provider's own updated_at (or the nearest timestamp the provider gives; '-infinity' for
-- objects without one) and the id of the inbox row whose handler wrote it (0 outside dispatch).
-- Every upsert applies only when its version is not older than the stored one:
--     ON CONFLICT … DO UPDATE … WHERE (excluded.source_updated_at, excluded.source_event_id)
--                                   >= (t.source_updated_at, t.source_event_id)
-- so an older event never overwrites newer data, an equal provider timestamp is decided by the
-- later-admitted delivery (GitHub timestamps have one-second resolution), and a retry or a
-- replay of the same delivery rewrites the same state (idempotent). A replayed older delivery
-- keeps its row id, so it cannot rewind what later deliveries wrote.
--
-- Deletions are versioned writes too: a removed object or link keeps its row with deleted = true
-- (a tombstone), so a late older "edited" or "added" cannot bring it back. Reads skip tombstones.

CREATE TABLE github_organization (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    login              text        NOT NULL,
    description        text,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- Users are upserted in their own transactions (DeliveryInbox.Write), apart from the handler's
-- step, on their natural key.
CREATE TABLE github_user (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    login              text        NOT NULL,
    type               text        NOT NULL DEFAULT '',
    avatar_url         text,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE github_repository (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    owner_id           bigint,
    owner_login        text        NOT NULL DEFAULT '',
    name               text        NOT NULL,
    full_name          text        NOT NULL,
    private            boolean     NOT NULL DEFAULT false,
    visibility         text        NOT NULL DEFAULT '',
    default_branch     text        NOT NULL DEFAULT '',
    archived           boolean     NOT NULL DEFAULT false,
    fork               boolean     NOT NULL DEFAULT false,
    description        text,
    html_url           text        NOT NULL DEFAULT '',
    created_at         timestamptz,
    pushed_at          timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_github_repository_list ON github_repository (workspace_id, full_name, id) WHERE NOT deleted;

CREATE TABLE github_organization_member (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    organization_id    bigint      NOT NULL,
    user_id            bigint      NOT NULL,
    role               text        NOT NULL DEFAULT '',
    state              text        NOT NULL DEFAULT '',
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, organization_id, user_id)
);

CREATE TABLE github_repository_collaborator (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    repository_id      bigint      NOT NULL,
    user_id            bigint      NOT NULL,
    permission         text        NOT NULL DEFAULT '',
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, repository_id, user_id)
);

CREATE TABLE github_team (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    organization_id    bigint,
    name               text        NOT NULL,
    slug               text        NOT NULL DEFAULT '',
    description        text,
    privacy            text        NOT NULL DEFAULT '',
    permission         text        NOT NULL DEFAULT '',
    parent_id          bigint,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE github_team_member (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    team_id            bigint      NOT NULL,
    user_id            bigint      NOT NULL,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, team_id, user_id)
);

CREATE TABLE github_team_repository (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    team_id            bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    permission         text        NOT NULL DEFAULT '',
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, team_id, repository_id)
);

-- Labels, like users, are upserted in their own transactions on their natural key.
CREATE TABLE github_label (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    name               text        NOT NULL,
    color              text        NOT NULL DEFAULT '',
    description        text,
    is_default         boolean     NOT NULL DEFAULT false,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE github_milestone (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    number             integer     NOT NULL,
    title              text        NOT NULL,
    description        text,
    state              text        NOT NULL DEFAULT '',
    due_on             timestamptz,
    closed_at          timestamptz,
    created_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE github_issue (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    number             integer     NOT NULL,
    title              text        NOT NULL,
    body               text,
    state              text        NOT NULL DEFAULT '',
    state_reason       text,
    locked             boolean     NOT NULL DEFAULT false,
    author_id          bigint,
    milestone_id       bigint,
    label_ids          bigint[]    NOT NULL DEFAULT '{}',
    assignee_ids       bigint[]    NOT NULL DEFAULT '{}',
    comment_count      integer     NOT NULL DEFAULT 0,
    html_url           text        NOT NULL DEFAULT '',
    created_at         timestamptz,
    closed_at          timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_github_issue_list ON github_issue (workspace_id, repository_id, number) WHERE NOT deleted;

-- Sub-issue and dependency links between two mirrored issues. A link to an issue of a
-- repository the workspace does not monitor is not written.
CREATE TABLE github_sub_issue (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    parent_issue_id    bigint      NOT NULL,
    sub_issue_id       bigint      NOT NULL,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, parent_issue_id, sub_issue_id)
);

CREATE TABLE github_issue_dependency (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    blocked_issue_id   bigint      NOT NULL,
    blocking_issue_id  bigint      NOT NULL,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, blocked_issue_id, blocking_issue_id)
);

CREATE TABLE github_issue_comment (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    issue_id           bigint      NOT NULL,
    author_id          bigint,
    body               text,
    html_url           text        NOT NULL DEFAULT '',
    created_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_github_issue_comment_issue ON github_issue_comment (workspace_id, issue_id);

CREATE TABLE github_pull_request (
    workspace_id            bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                      bigint      NOT NULL,
    repository_id           bigint      NOT NULL,
    number                  integer     NOT NULL,
    title                   text        NOT NULL,
    body                    text,
    state                   text        NOT NULL DEFAULT '',
    draft                   boolean     NOT NULL DEFAULT false,
    locked                  boolean     NOT NULL DEFAULT false,
    merged                  boolean     NOT NULL DEFAULT false,
    author_id               bigint,
    head_ref                text        NOT NULL DEFAULT '',
    head_sha                text        NOT NULL DEFAULT '',
    base_ref                text        NOT NULL DEFAULT '',
    base_sha                text        NOT NULL DEFAULT '',
    milestone_id            bigint,
    label_ids               bigint[]    NOT NULL DEFAULT '{}',
    assignee_ids            bigint[]    NOT NULL DEFAULT '{}',
    requested_reviewer_ids  bigint[]    NOT NULL DEFAULT '{}',
    html_url                text        NOT NULL DEFAULT '',
    created_at              timestamptz,
    closed_at               timestamptz,
    merged_at               timestamptz,
    deleted                 boolean     NOT NULL DEFAULT false,
    source_updated_at       timestamptz NOT NULL,
    source_event_id         bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_github_pull_request_list ON github_pull_request (workspace_id, repository_id, number) WHERE NOT deleted;
CREATE INDEX ix_github_pull_request_head ON github_pull_request (workspace_id, repository_id, head_sha) WHERE NOT deleted;

-- The check state of a pull request's head, recomputed by its refresh step from the mirrored
-- check runs and commit statuses. It is derived data: a refresh always computes it from what
-- the mirror holds now, so it is written without a version.
CREATE TABLE github_pull_request_checks (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    pull_request_id    bigint      NOT NULL,
    head_sha           text        NOT NULL,
    state              text        NOT NULL CHECK (state IN ('none', 'pending', 'success', 'failure')),
    total              integer     NOT NULL,
    refreshed_at       timestamptz NOT NULL DEFAULT now(),
    refreshed_by_event bigint      NOT NULL,
    PRIMARY KEY (workspace_id, pull_request_id)
);

CREATE TABLE github_review (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    pull_request_id    bigint      NOT NULL,
    author_id          bigint,
    state              text        NOT NULL DEFAULT '',
    body               text,
    commit_id          text        NOT NULL DEFAULT '',
    submitted_at       timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE github_review_comment (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    pull_request_id    bigint      NOT NULL,
    review_id          bigint,
    in_reply_to_id     bigint,
    author_id          bigint,
    path               text        NOT NULL DEFAULT '',
    line               integer,
    body               text,
    commit_id          text        NOT NULL DEFAULT '',
    created_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- A review thread has no numeric id in webhooks; its node id is its provider id.
CREATE TABLE github_review_thread (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    node_id            text        NOT NULL,
    repository_id      bigint      NOT NULL,
    pull_request_id    bigint      NOT NULL,
    resolved           boolean     NOT NULL DEFAULT false,
    path               text        NOT NULL DEFAULT '',
    comment_ids        bigint[]    NOT NULL DEFAULT '{}',
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, node_id)
);

-- A commit is immutable; its key is its repository and SHA (a fork's copy is another row).
CREATE TABLE github_commit (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    repository_id      bigint      NOT NULL,
    sha                text        NOT NULL,
    message            text        NOT NULL DEFAULT '',
    author_name        text        NOT NULL DEFAULT '',
    author_email       text        NOT NULL DEFAULT '',
    author_login       text,
    committer_name     text        NOT NULL DEFAULT '',
    committer_email    text        NOT NULL DEFAULT '',
    committed_at       timestamptz,
    html_url           text        NOT NULL DEFAULT '',
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, repository_id, sha)
);
CREATE INDEX ix_github_commit_list ON github_commit (workspace_id, repository_id, committed_at DESC, sha);

-- Where a push left a branch or tag (a deleted ref is a tombstone).
CREATE TABLE github_ref (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    repository_id      bigint      NOT NULL,
    ref                text        NOT NULL,
    sha                text        NOT NULL,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, repository_id, ref)
);

CREATE TABLE github_commit_status (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    sha                text        NOT NULL,
    context            text        NOT NULL DEFAULT '',
    state              text        NOT NULL,
    description        text,
    target_url         text,
    created_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_github_commit_status_sha ON github_commit_status (workspace_id, repository_id, sha);

CREATE TABLE github_check_suite (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    head_sha           text        NOT NULL,
    head_branch        text,
    status             text        NOT NULL DEFAULT '',
    conclusion         text,
    app_slug           text,
    created_at         timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- A check run has no updated_at: its version is completed_at, else started_at.
CREATE TABLE github_check_run (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    check_suite_id     bigint,
    head_sha           text        NOT NULL,
    name               text        NOT NULL,
    status             text        NOT NULL DEFAULT '',
    conclusion         text,
    started_at         timestamptz,
    completed_at       timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX ix_github_check_run_sha ON github_check_run (workspace_id, repository_id, head_sha);

-- The App installations GitHub told the instance about. Installation events are stored for no
-- workspace (the instance inbox), so this record is instance-wide: it also records an
-- installation for which no connection exists yet (nothing to repair). connection_id is the App
-- connection the last event found (NULL: none).
CREATE TABLE github_installation (
    installation_id       bigint      PRIMARY KEY,
    account_id            bigint,
    account_login         text        NOT NULL DEFAULT '',
    account_type          text        NOT NULL DEFAULT '',
    target_type           text        NOT NULL DEFAULT '',
    repository_selection  text        NOT NULL DEFAULT '',
    state                 text        NOT NULL CHECK (state IN ('ACTIVE', 'SUSPENDED', 'DELETED')),
    last_action           text        NOT NULL,
    connection_id         bigint,
    source_updated_at     timestamptz NOT NULL,
    source_event_id       bigint      NOT NULL
);

-- The repositories an installation covers, for each workspace whose App connection is that
-- installation.
CREATE TABLE github_installation_repository (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    installation_id    bigint      NOT NULL,
    repository_id      bigint      NOT NULL,
    full_name          text        NOT NULL DEFAULT '',
    private            boolean     NOT NULL DEFAULT false,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, installation_id, repository_id)
);

-- +goose Down
DROP TABLE github_installation_repository;
DROP TABLE github_installation;
DROP TABLE github_check_run;
DROP TABLE github_check_suite;
DROP TABLE github_commit_status;
DROP TABLE github_ref;
DROP TABLE github_commit;
DROP TABLE github_review_thread;
DROP TABLE github_review_comment;
DROP TABLE github_review;
DROP TABLE github_pull_request_checks;
DROP TABLE github_pull_request;
DROP TABLE github_issue_comment;
DROP TABLE github_issue_dependency;
DROP TABLE github_sub_issue;
DROP TABLE github_issue;
DROP TABLE github_milestone;
DROP TABLE github_label;
DROP TABLE github_team_repository;
DROP TABLE github_team_member;
DROP TABLE github_team;
DROP TABLE github_repository_collaborator;
DROP TABLE github_organization_member;
DROP TABLE github_repository;
DROP TABLE github_user;
DROP TABLE github_organization;
