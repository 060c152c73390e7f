package githubmirror

// Every upsert applies only when its version (source_updated_at, source_event_id) is not
// older than the stored row's: see migrations/00005_github_mirror.sql. newerOrSame is that
// condition for an ON CONFLICT … DO UPDATE on the table aliased t, with one skip:
// at an equal version a proposed row identical to the stored one is not written, so a retried
// delivery's users and labels, or a replayed event's writes, make no new row version and no
// WAL. A proposed row that differs at the same version (a sync page without an event, which
// carries no version of its own) still applies, as before. The comparison is of whole rows as
// jsonb (every column type compares there); it runs only at equal versions.
const newerOrSame = `
WHERE (excluded.source_updated_at, excluded.source_event_id) > (t.source_updated_at, t.source_event_id)
   OR ((excluded.source_updated_at, excluded.source_event_id) = (t.source_updated_at, t.source_event_id)
       AND to_jsonb(excluded) IS DISTINCT FROM to_jsonb(t))`

// versionColumns are set by every upsert that applies.
const versionColumns = `deleted = excluded.deleted, source_updated_at = excluded.source_updated_at,
	source_event_id = excluded.source_event_id`

const upsertUser = `
INSERT INTO github_user AS t (workspace_id, id, login, type, avatar_url, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7)
ON CONFLICT (workspace_id, id) DO UPDATE SET login = excluded.login, type = excluded.type,
	avatar_url = excluded.avatar_url, ` + versionColumns + newerOrSame

// newerThanStored lists which of the rows of table ($2, their versions $3 and $4) the
// workspace's mirror does not hold at an equal or newer version: the upserts of the others
// would lose to the version rule.
func newerThanStored(table string) string {
	return `
SELECT u.id FROM unnest($2::bigint[], $3::timestamptz[], $4::bigint[]) AS u (id, at, event_id)
WHERE NOT EXISTS (SELECT 1 FROM ` + table + ` t WHERE t.workspace_id = $1 AND t.id = u.id
	AND (t.source_updated_at, t.source_event_id) >= (u.at, u.event_id))`
}

var (
	usersToWrite  = newerThanStored("github_user")
	labelsToWrite = newerThanStored("github_label")
)

const upsertLabel = `
INSERT INTO github_label AS t (workspace_id, id, repository_id, name, color, description, is_default,
	deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id, name = excluded.name,
	color = excluded.color, description = excluded.description, is_default = excluded.is_default, ` +
	versionColumns + newerOrSame

const upsertOrganization = `
INSERT INTO github_organization AS t (workspace_id, id, login, description, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (workspace_id, id) DO UPDATE SET login = excluded.login, description = excluded.description, ` +
	versionColumns + newerOrSame

const upsertRepository = `
INSERT INTO github_repository AS t (workspace_id, id, owner_id, owner_login, name, full_name, private,
	visibility, default_branch, archived, fork, description, html_url, created_at, pushed_at,
	deleted, source_updated_at, source_event_id)
VALUES ($1, $2, NULLIF($3, 0), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
ON CONFLICT (workspace_id, id) DO UPDATE SET owner_id = excluded.owner_id, owner_login = excluded.owner_login,
	name = excluded.name, full_name = excluded.full_name, private = excluded.private,
	visibility = excluded.visibility, default_branch = excluded.default_branch,
	archived = excluded.archived, fork = excluded.fork, description = excluded.description,
	html_url = excluded.html_url, created_at = COALESCE(excluded.created_at, t.created_at),
	pushed_at = COALESCE(excluded.pushed_at, t.pushed_at), ` + versionColumns + newerOrSame

const setOrganizationMember = `
INSERT INTO github_organization_member AS t (workspace_id, organization_id, user_id, role, state,
	deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (workspace_id, organization_id, user_id) DO UPDATE SET role = excluded.role, state = excluded.state, ` +
	versionColumns + newerOrSame

// setCollaborator keeps the stored permission when the event does not name one (an "edited"
// payload tells only the old permission).
const setCollaborator = `
INSERT INTO github_repository_collaborator AS t (workspace_id, repository_id, user_id, permission,
	deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (workspace_id, repository_id, user_id) DO UPDATE SET
	permission = COALESCE(NULLIF(excluded.permission, ''), t.permission), ` + versionColumns + newerOrSame

// monitors asks ProviderEventSubscriptions the question admission asks: does the workspace
// subscribe to the repository or to its owner through an ACTIVE GitHub connection.
const monitors = `
SELECT EXISTS (
	SELECT 1 FROM connection_subscription s JOIN connection c ON c.id = s.connection_id
	WHERE s.workspace_id = $1 AND s.provider = 'GITHUB' AND c.state = 'ACTIVE'
	  AND ((s.resource_type = 'repository' AND s.resource_id = $2)
	    OR (s.resource_type = 'organization' AND s.resource_id = $3)))`

const upsertTeam = `
INSERT INTO github_team AS t (workspace_id, id, organization_id, name, slug, description, privacy,
	permission, parent_id, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, NULLIF($3, 0), $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (workspace_id, id) DO UPDATE SET organization_id = COALESCE(excluded.organization_id, t.organization_id),
	name = excluded.name, slug = COALESCE(NULLIF(excluded.slug, ''), t.slug),
	description = excluded.description, privacy = COALESCE(NULLIF(excluded.privacy, ''), t.privacy),
	permission = COALESCE(NULLIF(excluded.permission, ''), t.permission), parent_id = excluded.parent_id, ` +
	versionColumns + newerOrSame

const setTeamMember = `
INSERT INTO github_team_member AS t (workspace_id, team_id, user_id, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (workspace_id, team_id, user_id) DO UPDATE SET ` + versionColumns + newerOrSame

const setTeamRepository = `
INSERT INTO github_team_repository AS t (workspace_id, team_id, repository_id, permission, deleted,
	source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (workspace_id, team_id, repository_id) DO UPDATE SET
	permission = COALESCE(NULLIF(excluded.permission, ''), t.permission), ` + versionColumns + newerOrSame

const upsertMilestone = `
INSERT INTO github_milestone AS t (workspace_id, id, repository_id, number, title, description, state,
	due_on, closed_at, created_at, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id, number = excluded.number,
	title = excluded.title, description = excluded.description, state = excluded.state,
	due_on = excluded.due_on, closed_at = excluded.closed_at, created_at = excluded.created_at, ` +
	versionColumns + newerOrSame

const upsertIssue = `
INSERT INTO github_issue AS t (workspace_id, id, repository_id, number, title, body, state, state_reason,
	locked, author_id, milestone_id, label_ids, assignee_ids, comment_count, html_url, created_at,
	closed_at, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id, number = excluded.number,
	title = excluded.title, body = excluded.body, state = excluded.state, state_reason = excluded.state_reason,
	locked = excluded.locked, author_id = excluded.author_id, milestone_id = excluded.milestone_id,
	label_ids = excluded.label_ids, assignee_ids = excluded.assignee_ids,
	comment_count = excluded.comment_count, html_url = excluded.html_url,
	created_at = excluded.created_at, closed_at = excluded.closed_at, ` + versionColumns + newerOrSame

const setSubIssue = `
INSERT INTO github_sub_issue AS t (workspace_id, parent_issue_id, sub_issue_id, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (workspace_id, parent_issue_id, sub_issue_id) DO UPDATE SET ` + versionColumns + newerOrSame

const setIssueDependency = `
INSERT INTO github_issue_dependency AS t (workspace_id, blocked_issue_id, blocking_issue_id, deleted,
	source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (workspace_id, blocked_issue_id, blocking_issue_id) DO UPDATE SET ` + versionColumns + newerOrSame

const upsertIssueComment = `
INSERT INTO github_issue_comment AS t (workspace_id, id, repository_id, issue_id, author_id, body, html_url,
	created_at, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id, issue_id = excluded.issue_id,
	author_id = excluded.author_id, body = excluded.body, html_url = excluded.html_url,
	created_at = excluded.created_at, ` + versionColumns + newerOrSame

const upsertPullRequest = `
INSERT INTO github_pull_request AS t (workspace_id, id, repository_id, number, title, body, state, draft,
	locked, merged, author_id, head_ref, head_sha, base_ref, base_sha, milestone_id, label_ids,
	assignee_ids, requested_reviewer_ids, html_url, created_at, closed_at, merged_at,
	source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
	$21, $22, $23, $24, $25)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id, number = excluded.number,
	title = excluded.title, body = excluded.body, state = excluded.state, draft = excluded.draft,
	locked = excluded.locked, merged = excluded.merged, author_id = excluded.author_id,
	head_ref = excluded.head_ref, head_sha = excluded.head_sha, base_ref = excluded.base_ref,
	base_sha = excluded.base_sha, milestone_id = excluded.milestone_id, label_ids = excluded.label_ids,
	assignee_ids = excluded.assignee_ids, requested_reviewer_ids = excluded.requested_reviewer_ids,
	html_url = excluded.html_url, created_at = excluded.created_at, closed_at = excluded.closed_at,
	merged_at = excluded.merged_at, source_updated_at = excluded.source_updated_at,
	source_event_id = excluded.source_event_id` + newerOrSame

// pullRequestHead reads the mirrored pull request: in the step's transaction it sees the
// upsert just made (or the newer row that won over it).
const pullRequestHead = `
SELECT id, repository_id, head_sha, state FROM github_pull_request
WHERE workspace_id = $1 AND id = $2 AND NOT deleted`

const pullRequestsWithHead = `
SELECT id FROM github_pull_request
WHERE workspace_id = $1 AND repository_id = $2 AND head_sha = $3 AND state = 'open' AND NOT deleted
ORDER BY id`

const upsertReview = `
INSERT INTO github_review AS t (workspace_id, id, repository_id, pull_request_id, author_id, state, body,
	commit_id, submitted_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id,
	pull_request_id = excluded.pull_request_id, author_id = excluded.author_id, state = excluded.state,
	body = excluded.body, commit_id = excluded.commit_id, submitted_at = excluded.submitted_at,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id` + newerOrSame

const upsertReviewComment = `
INSERT INTO github_review_comment AS t (workspace_id, id, repository_id, pull_request_id, review_id,
	in_reply_to_id, author_id, path, line, body, commit_id, created_at, deleted, source_updated_at,
	source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id,
	pull_request_id = excluded.pull_request_id, review_id = excluded.review_id,
	in_reply_to_id = excluded.in_reply_to_id, author_id = excluded.author_id, path = excluded.path,
	line = excluded.line, body = excluded.body, commit_id = excluded.commit_id,
	created_at = excluded.created_at, ` + versionColumns + newerOrSame

const upsertReviewThread = `
INSERT INTO github_review_thread AS t (workspace_id, node_id, repository_id, pull_request_id, resolved,
	path, comment_ids, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (workspace_id, node_id) DO UPDATE SET repository_id = excluded.repository_id,
	pull_request_id = excluded.pull_request_id, resolved = excluded.resolved, path = excluded.path,
	comment_ids = excluded.comment_ids, source_updated_at = excluded.source_updated_at,
	source_event_id = excluded.source_event_id` + newerOrSame

const upsertCommit = `
INSERT INTO github_commit AS t (workspace_id, repository_id, sha, message, author_name, author_email,
	author_login, committer_name, committer_email, committed_at, html_url, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (workspace_id, repository_id, sha) DO UPDATE SET message = excluded.message,
	author_name = excluded.author_name, author_email = excluded.author_email,
	author_login = COALESCE(excluded.author_login, t.author_login), committer_name = excluded.committer_name,
	committer_email = excluded.committer_email, committed_at = excluded.committed_at,
	html_url = excluded.html_url, source_updated_at = excluded.source_updated_at,
	source_event_id = excluded.source_event_id` + newerOrSame

const setRef = `
INSERT INTO github_ref AS t (workspace_id, repository_id, ref, sha, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (workspace_id, repository_id, ref) DO UPDATE SET sha = excluded.sha, ` + versionColumns + newerOrSame

const upsertCommitStatus = `
INSERT INTO github_commit_status AS t (workspace_id, id, repository_id, sha, context, state, description,
	target_url, created_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id, sha = excluded.sha,
	context = excluded.context, state = excluded.state, description = excluded.description,
	target_url = excluded.target_url, created_at = excluded.created_at,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id` + newerOrSame

const upsertCheckSuite = `
INSERT INTO github_check_suite AS t (workspace_id, id, repository_id, head_sha, head_branch, status,
	conclusion, app_slug, created_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id,
	head_sha = excluded.head_sha, head_branch = excluded.head_branch, status = excluded.status,
	conclusion = excluded.conclusion, app_slug = COALESCE(excluded.app_slug, t.app_slug),
	created_at = excluded.created_at, source_updated_at = excluded.source_updated_at,
	source_event_id = excluded.source_event_id` + newerOrSame

const upsertCheckRun = `
INSERT INTO github_check_run AS t (workspace_id, id, repository_id, check_suite_id, head_sha, name, status,
	conclusion, started_at, completed_at, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (workspace_id, id) DO UPDATE SET repository_id = excluded.repository_id,
	check_suite_id = COALESCE(excluded.check_suite_id, t.check_suite_id), head_sha = excluded.head_sha,
	name = excluded.name, status = excluded.status, conclusion = excluded.conclusion,
	started_at = excluded.started_at, completed_at = excluded.completed_at,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id` + newerOrSame

// refreshPullRequestChecks recomputes a pull request's check state from the latest check run
// of each name and the latest status of each context of its mirrored head: failure when any
// failed, pending when any is not finished, success when all passed, none without any. It is
// derived from what the mirror holds now, so it is written without a version. Nothing is
// written for a pull request that is not mirrored.
const refreshPullRequestChecks = `
WITH pr AS (
	SELECT repository_id, head_sha FROM github_pull_request
	WHERE workspace_id = $1 AND id = $2 AND NOT deleted AND head_sha <> ''
), runs AS (
	SELECT DISTINCT ON (r.name) r.status, r.conclusion
	FROM github_check_run r JOIN pr ON r.repository_id = pr.repository_id AND r.head_sha = pr.head_sha
	WHERE r.workspace_id = $1 AND NOT r.deleted
	ORDER BY r.name, r.id DESC
), statuses AS (
	SELECT DISTINCT ON (s.context) s.state
	FROM github_commit_status s JOIN pr ON s.repository_id = pr.repository_id AND s.sha = pr.head_sha
	WHERE s.workspace_id = $1 AND NOT s.deleted
	ORDER BY s.context, s.source_updated_at DESC, s.id DESC
), outcomes AS (
	SELECT CASE WHEN status <> 'completed' THEN 'pending'
	            WHEN conclusion IN ('success', 'neutral', 'skipped') THEN 'success'
	            ELSE 'failure' END AS o
	FROM runs
	UNION ALL
	SELECT CASE state WHEN 'success' THEN 'success' WHEN 'pending' THEN 'pending' ELSE 'failure' END
	FROM statuses
)
INSERT INTO github_pull_request_checks (workspace_id, pull_request_id, head_sha, state, total, refreshed_by_event)
SELECT $1, $2, pr.head_sha,
	CASE WHEN count(o.o) = 0 THEN 'none'
	     WHEN bool_or(o.o = 'failure') THEN 'failure'
	     WHEN bool_or(o.o = 'pending') THEN 'pending'
	     ELSE 'success' END,
	count(o.o), $3
FROM pr LEFT JOIN outcomes o ON true
GROUP BY pr.head_sha
ON CONFLICT (workspace_id, pull_request_id) DO UPDATE SET head_sha = excluded.head_sha,
	state = excluded.state, total = excluded.total, refreshed_at = now(),
	refreshed_by_event = excluded.refreshed_by_event`

// lockAppConnection is the App connection's lifecycle lock, the lock the management API's
// transitions and admission take on the same row: FOR UPDATE waits for the admissions that
// hold it FOR SHARE, so a suspension commits before an admission reads the state or after its
// inbox insert. Only the live connection (at most one: uq_connection_installation) is read: an
// UNINSTALLED one leaves that state only through the install flow or the instance
// administrator, never through an installation event.
const lockAppConnection = `
SELECT id, workspace_id, state FROM connection
WHERE kind = 'GITHUB_APP' AND source_key = $1 AND state <> 'UNINSTALLED'
FOR UPDATE`

const setAppConnectionState = `
UPDATE connection SET state = $2, updated_at = now() WHERE id = $1 AND kind = 'GITHUB_APP'
RETURNING workspace_id`

const recordInstallation = `
INSERT INTO github_installation AS t (installation_id, account_id, account_login, account_type, target_type,
	repository_selection, state, last_action, connection_id, source_updated_at, source_event_id)
VALUES ($1, NULLIF($2, 0), $3, $4, $5, $6, $7, $8, NULLIF($9, 0), $10, $11)
ON CONFLICT (installation_id) DO UPDATE SET account_id = COALESCE(excluded.account_id, t.account_id),
	account_login = COALESCE(NULLIF(excluded.account_login, ''), t.account_login),
	account_type = COALESCE(NULLIF(excluded.account_type, ''), t.account_type),
	target_type = COALESCE(NULLIF(excluded.target_type, ''), t.target_type),
	repository_selection = COALESCE(NULLIF(excluded.repository_selection, ''), t.repository_selection),
	state = excluded.state, last_action = excluded.last_action, connection_id = excluded.connection_id,
	source_updated_at = excluded.source_updated_at, source_event_id = excluded.source_event_id` + newerOrSame + `
RETURNING 1`

// renameInstallationAccount: a rename has no provider timestamp; it applies unless a
// later-admitted event already wrote the record.
const renameInstallationAccount = `
UPDATE github_installation SET account_login = $2, source_event_id = $3
WHERE installation_id = $1 AND source_event_id <= $3`

const setInstallationRepository = `
INSERT INTO github_installation_repository AS t (workspace_id, installation_id, repository_id, full_name,
	private, deleted, source_updated_at, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (workspace_id, installation_id, repository_id) DO UPDATE SET
	full_name = COALESCE(NULLIF(excluded.full_name, ''), t.full_name), private = excluded.private, ` +
	versionColumns + newerOrSame

const removeInstallationRepositories = `
UPDATE github_installation_repository SET deleted = true, source_updated_at = $3, source_event_id = $4
WHERE workspace_id = $1 AND installation_id = $2 AND ($3::timestamptz, $4::bigint) >= (source_updated_at, source_event_id)`
