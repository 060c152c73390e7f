package gitlabmirror

// Every upsert applies under the version rule of migration 00006: only when the written version
// (source_updated_at, source_event_id) is not older than the stored one. A version without a
// provider timestamp is written as '-infinity', so any timestamped version is newer.
// The statements take no lock of their own beyond the row the upsert writes.

const upsertGroup = `
INSERT INTO gitlab_group AS t (workspace_id, id, parent_id, name, path, full_path, deleted,
                               source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    parent_id = COALESCE(excluded.parent_id, t.parent_id),
    name      = COALESCE(NULLIF(excluded.name, ''), t.name),
    path      = COALESCE(NULLIF(excluded.path, ''), t.path),
    full_path = COALESCE(NULLIF(excluded.full_path, ''), t.full_path),
    deleted   = excluded.deleted,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

// upsertProject is discovery: it fills what the event tells and never touches the monitor
// state, which only project events change (setProjectMonitor).
const upsertProject = `
INSERT INTO gitlab_project AS t (workspace_id, id, namespace_id, name, path_with_namespace, web_url,
                                 default_branch, visibility, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    namespace_id        = COALESCE(excluded.namespace_id, t.namespace_id),
    name                = COALESCE(NULLIF(excluded.name, ''), t.name),
    path_with_namespace = COALESCE(NULLIF(excluded.path_with_namespace, ''), t.path_with_namespace),
    web_url             = COALESCE(NULLIF(excluded.web_url, ''), t.web_url),
    default_branch      = COALESCE(NULLIF(excluded.default_branch, ''), t.default_branch),
    visibility          = COALESCE(NULLIF(excluded.visibility, ''), t.visibility),
    source_updated_at   = excluded.source_updated_at,
    source_event_id     = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

// setProjectMonitor has its own version pair, so a discovery write and a monitor change never
// decide over each other's columns.
const setProjectMonitor = `
INSERT INTO gitlab_project AS t (workspace_id, id, name, path_with_namespace, monitored, deleted,
                                 source_updated_at, source_event_id, monitor_updated_at, monitor_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7, $8)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    name                = COALESCE(NULLIF(excluded.name, ''), t.name),
    path_with_namespace = COALESCE(NULLIF(excluded.path_with_namespace, ''), t.path_with_namespace),
    monitored           = excluded.monitored,
    deleted             = excluded.deleted,
    monitor_updated_at  = excluded.monitor_updated_at,
    monitor_event_id    = excluded.monitor_event_id
WHERE (excluded.monitor_updated_at, excluded.monitor_event_id) >= (t.monitor_updated_at, t.monitor_event_id)`

const upsertMember = `
INSERT INTO gitlab_member AS t (workspace_id, source_type, source_id, user_id, username, access_level,
                                expires_at, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (workspace_id, source_type, source_id, user_id) DO UPDATE SET
    username     = COALESCE(NULLIF(excluded.username, ''), t.username),
    access_level = excluded.access_level,
    expires_at   = excluded.expires_at,
    deleted      = excluded.deleted,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

const upsertMilestone = `
INSERT INTO gitlab_milestone AS t (workspace_id, id, project_id, group_id, iid, title, description, state,
                                   due_date, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::timestamptz::date, $10, $11, $12)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    project_id  = COALESCE(excluded.project_id, t.project_id),
    group_id    = COALESCE(excluded.group_id, t.group_id),
    iid         = excluded.iid,
    title       = excluded.title,
    description = excluded.description,
    state       = excluded.state,
    due_date    = excluded.due_date,
    deleted     = excluded.deleted,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

const upsertIssue = `
INSERT INTO gitlab_issue AS t (workspace_id, id, project_id, iid, title, description, state, author_id,
                               milestone_id, labels, web_url, created_at, closed_at, deleted,
                               source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    project_id   = excluded.project_id,
    iid          = excluded.iid,
    title        = excluded.title,
    description  = excluded.description,
    state        = excluded.state,
    author_id    = COALESCE(excluded.author_id, t.author_id),
    milestone_id = excluded.milestone_id,
    labels       = excluded.labels,
    web_url      = COALESCE(NULLIF(excluded.web_url, ''), t.web_url),
    created_at   = COALESCE(excluded.created_at, t.created_at),
    closed_at    = excluded.closed_at,
    deleted      = excluded.deleted,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

const upsertNote = `
INSERT INTO gitlab_note AS t (workspace_id, id, project_id, noteable_type, noteable_id, commit_sha, author_id,
                              body, system, web_url, created_at, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    body       = excluded.body,
    system     = excluded.system,
    web_url    = COALESCE(NULLIF(excluded.web_url, ''), t.web_url),
    created_at = COALESCE(excluded.created_at, t.created_at),
    deleted    = excluded.deleted,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

const upsertMergeRequest = `
INSERT INTO gitlab_merge_request AS t (workspace_id, id, project_id, iid, title, description, state, draft,
                                       source_branch, target_branch, head_sha, merge_status, author_id, web_url,
                                       created_at, merged_at, closed_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    project_id    = excluded.project_id,
    iid           = excluded.iid,
    title         = excluded.title,
    description   = excluded.description,
    state         = excluded.state,
    draft         = excluded.draft,
    source_branch = excluded.source_branch,
    target_branch = excluded.target_branch,
    head_sha      = COALESCE(NULLIF(excluded.head_sha, ''), t.head_sha),
    merge_status  = excluded.merge_status,
    author_id     = COALESCE(excluded.author_id, t.author_id),
    web_url       = COALESCE(NULLIF(excluded.web_url, ''), t.web_url),
    created_at    = COALESCE(excluded.created_at, t.created_at),
    merged_at     = excluded.merged_at,
    closed_at     = excluded.closed_at,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

// setReadiness updates only a merge request the event write kept, under the readiness version.
const setReadiness = `
UPDATE gitlab_merge_request SET
    ready = $3, readiness_reason = $4, approvals_left = $5,
    readiness_updated_at = $6, readiness_event_id = $7
WHERE workspace_id = $1 AND id = $2
  AND ($6::timestamptz, $7::bigint) >= (readiness_updated_at, readiness_event_id)`

const upsertPipeline = `
INSERT INTO gitlab_pipeline AS t (workspace_id, id, project_id, ref, sha, status, source, merge_request_id,
                                  created_at, finished_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    ref              = COALESCE(NULLIF(excluded.ref, ''), t.ref),
    sha              = COALESCE(NULLIF(excluded.sha, ''), t.sha),
    status           = excluded.status,
    source           = COALESCE(NULLIF(excluded.source, ''), t.source),
    merge_request_id = COALESCE(excluded.merge_request_id, t.merge_request_id),
    created_at       = COALESCE(excluded.created_at, t.created_at),
    finished_at      = excluded.finished_at,
    source_updated_at = excluded.source_updated_at,
    source_event_id   = excluded.source_event_id
WHERE (excluded.source_updated_at, excluded.source_event_id) >= (t.source_updated_at, t.source_event_id)`

// recordPush keeps the first delivery that persisted the push: a redelivery of the same push
// (same project, ref and after SHA) changes nothing.
const recordPush = `
INSERT INTO gitlab_push (workspace_id, project_id, ref, after_sha, before_sha, user_id, commit_count, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (workspace_id, project_id, ref, after_sha) DO NOTHING`

// insertCommit: a commit is its SHA, so an existing row is already right.
const insertCommit = `
INSERT INTO gitlab_commit (workspace_id, project_id, sha, title, message, author_name, author_email,
                           authored_at, url, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (workspace_id, project_id, sha) DO NOTHING`

// Reads of the read API. Each binds the workspace; tombstones are not listed.

const countProjects = `SELECT count(*) FROM gitlab_project WHERE workspace_id = $1 AND NOT deleted`

const listProjects = `
SELECT id, namespace_id, name, path_with_namespace, web_url, default_branch, visibility, monitored
FROM gitlab_project
WHERE workspace_id = $1 AND NOT deleted
ORDER BY path_with_namespace, id
LIMIT $2 OFFSET $3`

const projectExists = `SELECT EXISTS (SELECT 1 FROM gitlab_project WHERE workspace_id = $1 AND id = $2 AND NOT deleted)`

const countMergeRequests = `
SELECT count(*) FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = $2 AND NOT deleted`

const listMergeRequests = `
SELECT id, project_id, iid, title, state, draft, source_branch, target_branch, head_sha, merge_status,
       author_id, web_url, created_at, merged_at, closed_at, source_updated_at, ready, readiness_reason,
       approvals_left
FROM gitlab_merge_request
WHERE workspace_id = $1 AND project_id = $2 AND NOT deleted
ORDER BY iid DESC
LIMIT $3 OFFSET $4`
