package gitlabmirror

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The change feed for the GitLab entities beside merge requests, by the rule of merge requests:
// each upsert reports whether the version rule let it write and whether it wrote anything but
// its event id; only then is the change published, in the write's transaction. Projects
// compare what the read API shows of them (a discovery write that only moves the version
// publishes nothing); a merge request's readiness write publishes gitlab.merge_request.upserted
// when the readiness it shows changed; a commit, immutable, publishes when it is inserted. The
// read API lists only projects and merge requests, so the other views are shaped like the
// mirror row. A membership is published under its group's or project's subject (never one
// naming the user id: person erasure keeps subjects) with the username in its data.

// The change types of the other GitLab entities.
var (
	GroupUpserted     = change.MustType("gitlab.group.upserted")
	GroupDeleted      = change.MustType("gitlab.group.deleted")
	ProjectUpserted   = change.MustType("gitlab.project.upserted")
	ProjectDeleted    = change.MustType("gitlab.project.deleted")
	MemberUpserted    = change.MustType("gitlab.member.upserted")
	MemberDeleted     = change.MustType("gitlab.member.deleted")
	MilestoneUpserted = change.MustType("gitlab.milestone.upserted")
	MilestoneDeleted  = change.MustType("gitlab.milestone.deleted")
	IssueUpserted     = change.MustType("gitlab.issue.upserted")
	IssueDeleted      = change.MustType("gitlab.issue.deleted")
	NoteUpserted      = change.MustType("gitlab.note.upserted")
	NoteDeleted       = change.MustType("gitlab.note.deleted")
	PipelineUpserted  = change.MustType("gitlab.pipeline.upserted")
	CommitUpserted    = change.MustType("gitlab.commit.upserted")
)

// EntityViews shapes the other GitLab entities for the change feed (gitlabread.Views).
type EntityViews interface {
	Group(gitlabmodel.Group) any
	Project(gitlabmodel.ProjectView) any
	Member(gitlabmodel.Member) any
	Milestone(gitlabmodel.Milestone) any
	Issue(gitlabmodel.Issue) any
	Note(gitlabmodel.Note) any
	Pipeline(gitlabmodel.Pipeline) any
	Commit(gitlabmodel.Commit) any
}

// A merge request and a project are versioned in two parts, each with its own rule (the merge
// request's metadata and its readiness; the project's metadata and its monitor state). Their
// version is both parts, the metadata's first: the writes of one row commit one after the
// other, each part only moves forward, so versions in commit order never decrease.
var (
	mergeRequestVersion = sqlkit.VersionOf(sqlkit.MirrorVersion("t"),
		sqlkit.VersionTime("t.readiness_updated_at"), sqlkit.VersionNumber("t.readiness_event_id"))
	projectVersion = sqlkit.VersionOf(sqlkit.MirrorVersion("t"),
		sqlkit.VersionTime("t.monitor_updated_at"), sqlkit.VersionNumber("t.monitor_event_id"))
)

// projectShown is what the read API shows of a project, and its tombstone.
const projectShown = `namespace_id, name, path_with_namespace, web_url, default_branch, visibility, monitored, deleted`

var (
	upsertGroupReporting  = mirrorkit.Reporting(`SELECT * FROM gitlab_group WHERE workspace_id = $1 AND id = $2`, upsertGroup)
	upsertMemberReporting = mirrorkit.Reporting(`SELECT * FROM gitlab_member
		WHERE workspace_id = $1 AND source_type = $2 AND source_id = $3 AND user_id = $4`, upsertMember)
	upsertMilestoneReporting = mirrorkit.Reporting(`SELECT * FROM gitlab_milestone WHERE workspace_id = $1 AND id = $2`, upsertMilestone)
	upsertIssueReporting     = mirrorkit.Reporting(`SELECT * FROM gitlab_issue WHERE workspace_id = $1 AND id = $2`, upsertIssue)
	upsertNoteReporting      = mirrorkit.Reporting(`SELECT * FROM gitlab_note WHERE workspace_id = $1 AND id = $2`, upsertNote)
	upsertPipelineReporting  = `
WITH prior AS (SELECT * FROM gitlab_pipeline WHERE workspace_id = $1 AND id = $2)` + upsertPipeline + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id'), false, ` + sqlkit.MirrorVersion("t")

	projectReturning = `
RETURNING NOT EXISTS (SELECT 1 FROM prior p WHERE (p.` + strings.ReplaceAll(projectShown, ", ", ", p.") + `)
	IS NOT DISTINCT FROM (t.` + strings.ReplaceAll(projectShown, ", ", ", t.") + `)), t.deleted, ` + projectVersion
	projectPrior            = `SELECT * FROM gitlab_project WHERE workspace_id = $1 AND id = $2`
	upsertProjectReporting  = mirrorkit.ReportingAs(projectPrior, upsertProject, projectReturning)
	setProjectMonitorReport = mirrorkit.ReportingAs(projectPrior, setProjectMonitor, projectReturning)

	setReadinessReporting = "\nWITH prior AS (SELECT ready, readiness_reason, approvals_left FROM gitlab_merge_request WHERE workspace_id = $1 AND id = $2)" +
		strings.Replace(setReadiness, "UPDATE gitlab_merge_request SET", "UPDATE gitlab_merge_request AS t SET", 1) + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE (p.ready, p.readiness_reason, p.approvals_left) IS NOT DISTINCT FROM (t.ready, t.readiness_reason, t.approvals_left)), t.deleted, ` +
		mergeRequestVersion

	// A commit is written once (a later write of it changes nothing): its version is the
	// event that wrote it.
	insertCommitReporting = insertCommit + ` RETURNING true, false, ` + sqlkit.VersionNumber("source_event_id")
)

const (
	readGroupView = `SELECT id, parent_id, name, path, full_path, source_updated_at
		FROM gitlab_group WHERE workspace_id = $1 AND id = $2`
	readProjectView = `SELECT id, namespace_id, name, path_with_namespace, web_url, default_branch, visibility, monitored
		FROM gitlab_project WHERE workspace_id = $1 AND id = $2`
	readMemberView = `SELECT source_type, source_id, user_id, username, access_level, expires_at, source_updated_at
		FROM gitlab_member WHERE workspace_id = $1 AND source_type = $2 AND source_id = $3 AND user_id = $4`
	readMilestoneView = `SELECT id, project_id, group_id, iid, title, description, state, due_date::timestamptz, source_updated_at
		FROM gitlab_milestone WHERE workspace_id = $1 AND id = $2`
	readIssueView = `SELECT id, project_id, iid, title, description, state, author_id, milestone_id, labels, web_url,
		created_at, closed_at, source_updated_at
		FROM gitlab_issue WHERE workspace_id = $1 AND id = $2`
	readNoteView = `SELECT id, project_id, noteable_type, noteable_id, commit_sha, author_id, body, system, web_url,
		created_at, source_updated_at
		FROM gitlab_note WHERE workspace_id = $1 AND id = $2`
	readPipelineView = `SELECT id, project_id, ref, sha, status, source, merge_request_id, created_at, finished_at,
		source_updated_at
		FROM gitlab_pipeline WHERE workspace_id = $1 AND id = $2`
	readCommitView = `SELECT project_id, sha, title, message, author_name, authored_at, url
		FROM gitlab_commit WHERE workspace_id = $1 AND project_id = $2 AND sha = $3`
)

func subject(entity string, id int64) string {
	return "gitlab:" + entity + ":" + strconv.FormatInt(id, 10)
}

func idKey(id int64) map[string]int64 { return map[string]int64{"id": id} }

func (s *Store) views() EntityViews { return s.feed.Views() }

func (s *Store) groupWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab group", Plain: upsertGroup, SQL: upsertGroupReporting, Args: args,
		Subject: subject("group", id), Upserted: GroupUpserted, Deleted: GroupDeleted, Key: idKey(id),
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab group", readGroupView, []any{ws, id}, func(row pgx.Row, g *gitlabmodel.Group) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&g.ID, &g.ParentID, &g.Name, &g.Path, &g.FullPath, &updated)
				g.Version.UpdatedAt = finite(updated)
				return err
			}, s.views().Group)
		}}
}

func (s *Store) projectWrite(ws int64, op, plain, sql string, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: op, Plain: plain, SQL: sql, Args: args,
		Subject: subject("project", id), Upserted: ProjectUpserted, Deleted: ProjectDeleted, Key: idKey(id),
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab project", readProjectView, []any{ws, id}, func(row pgx.Row, p *gitlabmodel.ProjectView) error {
				return row.Scan(&p.ID, &p.NamespaceID, &p.Name, &p.PathWithNamespace, &p.WebURL, &p.DefaultBranch,
					&p.Visibility, &p.Monitored)
			}, s.views().Project)
		}}
}

func (s *Store) memberWrite(ws int64, args []any, m gitlabmodel.Member) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab member", Plain: upsertMember, SQL: upsertMemberReporting, Args: args,
		Subject: subject(m.SourceType, m.SourceID), Upserted: MemberUpserted, Deleted: MemberDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab member", readMemberView, []any{ws, m.SourceType, m.SourceID, m.UserID},
				func(row pgx.Row, r *gitlabmodel.Member) error {
					var updated pgtype.Timestamptz
					err := row.Scan(&r.SourceType, &r.SourceID, &r.UserID, &r.Username, &r.AccessLevel, &r.ExpiresAt, &updated)
					r.Version.UpdatedAt = finite(updated)
					return err
				}, s.views().Member)
		}}
}

func (s *Store) milestoneWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab milestone", Plain: upsertMilestone, SQL: upsertMilestoneReporting, Args: args,
		Subject: subject("milestone", id), Upserted: MilestoneUpserted, Deleted: MilestoneDeleted, Key: idKey(id),
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab milestone", readMilestoneView, []any{ws, id}, func(row pgx.Row, m *gitlabmodel.Milestone) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&m.ID, &m.ProjectID, &m.GroupID, &m.IID, &m.Title, &m.Description, &m.State, &m.DueDate, &updated)
				m.Version.UpdatedAt = finite(updated)
				return err
			}, s.views().Milestone)
		}}
}

func (s *Store) issueWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab issue", Plain: upsertIssue, SQL: upsertIssueReporting, Args: args,
		Subject: subject("issue", id), Upserted: IssueUpserted, Deleted: IssueDeleted, Key: idKey(id),
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab issue", readIssueView, []any{ws, id}, func(row pgx.Row, i *gitlabmodel.Issue) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&i.ID, &i.ProjectID, &i.IID, &i.Title, &i.Description, &i.State, &i.AuthorID, &i.MilestoneID,
					&i.Labels, &i.WebURL, &i.CreatedAt, &i.ClosedAt, &updated)
				i.Version.UpdatedAt = finite(updated)
				if i.Labels == nil {
					i.Labels = []string{}
				}
				return err
			}, s.views().Issue)
		}}
}

func (s *Store) noteWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab note", Plain: upsertNote, SQL: upsertNoteReporting, Args: args,
		Subject: subject("note", id), Upserted: NoteUpserted, Deleted: NoteDeleted, Key: idKey(id),
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab note", readNoteView, []any{ws, id}, func(row pgx.Row, n *gitlabmodel.Note) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&n.ID, &n.ProjectID, &n.NoteableType, &n.NoteableID, &n.CommitSHA, &n.AuthorID, &n.Body,
					&n.System, &n.WebURL, &n.CreatedAt, &updated)
				n.Version.UpdatedAt = finite(updated)
				return err
			}, s.views().Note)
		}}
}

func (s *Store) pipelineWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab pipeline", Plain: upsertPipeline, SQL: upsertPipelineReporting, Args: args,
		Subject: subject("pipeline", id), Upserted: PipelineUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab pipeline", readPipelineView, []any{ws, id}, func(row pgx.Row, p *gitlabmodel.Pipeline) error {
				var updated pgtype.Timestamptz
				err := row.Scan(&p.ID, &p.ProjectID, &p.Ref, &p.SHA, &p.Status, &p.Source, &p.MergeRequestID, &p.CreatedAt,
					&p.FinishedAt, &updated)
				p.Version.UpdatedAt = finite(updated)
				return err
			}, s.views().Pipeline)
		}}
}

func (s *Store) commitWrite(ws int64, args []any, projectID int64, sha string) mirrorkit.Write {
	return mirrorkit.Write{Op: "insert gitlab commit", Plain: insertCommit, SQL: insertCommitReporting, Args: args,
		Subject: subject("commit", projectID) + ":" + sha, Upserted: CommitUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read gitlab commit", readCommitView, []any{ws, projectID, sha}, func(row pgx.Row, c *gitlabmodel.Commit) error {
				return row.Scan(&c.ProjectID, &c.SHA, &c.Title, &c.Message, &c.AuthorName, &c.AuthoredAt, &c.URL)
			}, s.views().Commit)
		}}
}

// readinessWrite publishes the merge request, as the read API shows it, when its readiness
// changed.
func (s *Store) readinessWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "set gitlab merge request readiness", Plain: setReadiness, SQL: setReadinessReporting, Args: args,
		Subject: "gitlab:merge_request:" + strconv.FormatInt(id, 10), Upserted: MergeRequestUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) { return s.mergeRequestView(ctx, ptx, ws, id) }}
}

// Publishing to the change feed, as the GitHub mirror does (see githubmirror/changes.go): the
// merge request upsert reports whether the version rule let it write and whether it wrote
// anything but a new event id; only then is gitlab.merge_request.upserted published, in the
// write's transaction, with the merge request as the read API shows it.

// MergeRequestUpserted is the change type of a merge request write.
var MergeRequestUpserted = change.MustType("gitlab.merge_request.upserted")

// Views shapes mirrored rows as the read API shows them (gitlabread.Views).
type Views interface {
	MergeRequest(gitlabmodel.MergeRequestView) any
	EntityViews
}

// PublishChanges makes the store publish its changes through pub, shaped by views. Call it
// once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	return s.feed.Set("gitlab", pub, views)
}

var upsertMergeRequestReporting = mirrorkit.ReportingAs(
	`SELECT * FROM gitlab_merge_request WHERE workspace_id = $1 AND id = $2`, upsertMergeRequest,
	mirrorkit.Returning(mergeRequestVersion))

const (
	// readMergeRequestView is the read API's list row for one merge request.
	readMergeRequestView = `
SELECT id, project_id, iid, title, state, draft, source_branch, target_branch, head_sha, merge_status,
       author_id, web_url, created_at, merged_at, closed_at, source_updated_at, ready, readiness_reason,
       approvals_left
FROM gitlab_merge_request
WHERE workspace_id = $1 AND id = $2`
)

func (s *Store) mergeRequestWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{Op: "upsert gitlab merge request", Plain: upsertMergeRequest, SQL: upsertMergeRequestReporting,
		Args: args, Subject: subject("merge_request", id), Upserted: MergeRequestUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) { return s.mergeRequestView(ctx, ptx, ws, id) }}
}

// mergeRequestView reads the merge request in ptx and shapes it as the read API shows it.
func (s *Store) mergeRequestView(ctx context.Context, ptx pgx.Tx, ws, id int64) (any, error) {
	var (
		m       gitlabmodel.MergeRequestView
		updated pgtype.Timestamptz
	)
	err := ptx.QueryRow(ctx, readMergeRequestView, ws, id).Scan(&m.ID, &m.ProjectID, &m.IID, &m.Title, &m.State, &m.Draft,
		&m.SourceBranch, &m.TargetBranch, &m.HeadSHA, &m.MergeStatus, &m.AuthorID, &m.WebURL, &m.CreatedAt, &m.MergedAt,
		&m.ClosedAt, &updated, &m.Ready, &m.ReadinessReason, &m.ApprovalsLeft)
	if err != nil {
		return nil, sqlkit.Interpret("read gitlab merge request", err)
	}
	m.Version.UpdatedAt = finite(updated)
	return s.feed.Views().MergeRequest(m), nil
}
