package githubmirror

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The change feed for the entities beside issues, pull requests and commits: the same rule as
// changes.go (a reporting upsert compares the written row with the prior one; only a write
// that changed the row publishes, in the write's transaction), with one generic path. The read
// API shows none of these entities in a list of its own, so their views (EntityViews) are
// shaped like the mirror row, with the author's login where the row names a user.

// The change types of the other mirrored entities.
var (
	LabelUpserted          = change.MustType("github.label.upserted")
	LabelDeleted           = change.MustType("github.label.deleted")
	MilestoneUpserted      = change.MustType("github.milestone.upserted")
	MilestoneDeleted       = change.MustType("github.milestone.deleted")
	IssueCommentUpserted   = change.MustType("github.issue_comment.upserted")
	IssueCommentDeleted    = change.MustType("github.issue_comment.deleted")
	ReviewUpserted         = change.MustType("github.review.upserted")
	ReviewCommentUpserted  = change.MustType("github.review_comment.upserted")
	ReviewCommentDeleted   = change.MustType("github.review_comment.deleted")
	ReviewThreadUpserted   = change.MustType("github.review_thread.upserted")
	CommitStatusUpserted   = change.MustType("github.commit_status.upserted")
	CheckSuiteUpserted     = change.MustType("github.check_suite.upserted")
	CheckRunUpserted       = change.MustType("github.check_run.upserted")
	MemberUpserted         = change.MustType("github.member.upserted")
	MemberDeleted          = change.MustType("github.member.deleted")
	CollaboratorUpserted   = change.MustType("github.collaborator.upserted")
	CollaboratorDeleted    = change.MustType("github.collaborator.deleted")
	TeamUpserted           = change.MustType("github.team.upserted")
	TeamDeleted            = change.MustType("github.team.deleted")
	TeamMemberUpserted     = change.MustType("github.team_member.upserted")
	TeamMemberDeleted      = change.MustType("github.team_member.deleted")
	TeamRepositoryUpserted = change.MustType("github.team_repository.upserted")
	TeamRepositoryDeleted  = change.MustType("github.team_repository.deleted")
)

// EntityViews shapes the other mirrored entities for the change feed (githubread.Views).
type EntityViews interface {
	Label(LabelRow) any
	Milestone(MilestoneRow) any
	IssueComment(IssueCommentRow) any
	Review(ReviewRow) any
	ReviewComment(ReviewCommentRow) any
	ReviewThread(ReviewThreadRow) any
	CommitStatus(CommitStatusRow) any
	CheckSuite(CheckSuiteRow) any
	CheckRun(CheckRunRow) any
	Member(MemberRow) any
	Collaborator(CollaboratorRow) any
	Team(TeamRow) any
	TeamMember(TeamMemberRow) any
	TeamRepository(TeamRepositoryRow) any
}

// LabelRow is a mirrored label.
type LabelRow struct {
	ID           int64
	RepositoryID int64
	Name         string
	Color        string
	Description  *string
	Default      bool
}

// MilestoneRow is a mirrored milestone.
type MilestoneRow struct {
	ID           int64
	RepositoryID int64
	Number       int
	Title        string
	Description  *string
	State        string
	DueOn        *time.Time
	ClosedAt     *time.Time
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// IssueCommentRow is a mirrored issue (or pull request conversation) comment with its
// author's login.
type IssueCommentRow struct {
	ID           int64
	RepositoryID int64
	IssueID      int64
	AuthorLogin  *string
	Body         *string
	HTMLURL      string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// ReviewRow is a mirrored pull request review with its author's login.
type ReviewRow struct {
	ID            int64
	RepositoryID  int64
	PullRequestID int64
	AuthorLogin   *string
	State         string
	Body          *string
	CommitID      string
	SubmittedAt   *time.Time
}

// ReviewCommentRow is a mirrored review comment with its author's login.
type ReviewCommentRow struct {
	ID            int64
	RepositoryID  int64
	PullRequestID int64
	ReviewID      *int64
	InReplyToID   *int64
	AuthorLogin   *string
	Path          string
	Line          *int
	Body          *string
	CommitID      string
	CreatedAt     *time.Time
	UpdatedAt     *time.Time
}

// ReviewThreadRow is a mirrored review thread (its node id is its provider id).
type ReviewThreadRow struct {
	NodeID        string
	RepositoryID  int64
	PullRequestID int64
	Resolved      bool
	Path          string
	CommentIDs    []int64
}

// CommitStatusRow is a mirrored commit status.
type CommitStatusRow struct {
	ID           int64
	RepositoryID int64
	SHA          string
	Context      string
	State        string
	Description  *string
	TargetURL    *string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// CheckSuiteRow is a mirrored check suite.
type CheckSuiteRow struct {
	ID           int64
	RepositoryID int64
	HeadSHA      string
	HeadBranch   *string
	Status       string
	Conclusion   *string
	AppSlug      *string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// CheckRunRow is a mirrored check run.
type CheckRunRow struct {
	ID           int64
	RepositoryID int64
	CheckSuiteID *int64
	HeadSHA      string
	Name         string
	Status       string
	Conclusion   *string
	StartedAt    *time.Time
	CompletedAt  *time.Time
}

// MemberRow is a mirrored organization membership with the member's login.
type MemberRow struct {
	OrganizationID int64
	UserID         int64
	Login          *string
	Role           string
	State          string
}

// CollaboratorRow is a mirrored repository collaborator with the user's login.
type CollaboratorRow struct {
	RepositoryID int64
	UserID       int64
	Login        *string
	Permission   string
}

// TeamRow is a mirrored team.
type TeamRow struct {
	ID             int64
	OrganizationID *int64
	Name           string
	Slug           string
	Description    *string
	Privacy        string
	Permission     string
	ParentID       *int64
}

// TeamMemberRow is a mirrored team membership with the member's login.
type TeamMemberRow struct {
	TeamID int64
	UserID int64
	Login  *string
}

// TeamRepositoryRow is a repository a mirrored team has access to.
type TeamRepositoryRow struct {
	TeamID       int64
	RepositoryID int64
	Permission   string
}

// reporting makes a reporting upsert of upsert: prior reads the row it is about to write
// (bound to the upsert's own key parameters).
func reporting(prior, upsert string) string {
	return "\nWITH prior AS (" + prior + ")" + upsert + changedRow
}

var (
	upsertLabelReporting = reporting(
		`SELECT * FROM github_label WHERE workspace_id = $1 AND id = $2`, upsertLabel)
	upsertMilestoneReporting = reporting(
		`SELECT * FROM github_milestone WHERE workspace_id = $1 AND id = $2`, upsertMilestone)
	upsertIssueCommentReporting = reporting(
		`SELECT * FROM github_issue_comment WHERE workspace_id = $1 AND id = $2`, upsertIssueComment)
	upsertReviewReporting = reporting(
		`SELECT * FROM github_review WHERE workspace_id = $1 AND id = $2`, upsertReview)
	upsertReviewCommentReporting = reporting(
		`SELECT * FROM github_review_comment WHERE workspace_id = $1 AND id = $2`, upsertReviewComment)
	upsertReviewThreadReporting = reporting(
		`SELECT * FROM github_review_thread WHERE workspace_id = $1 AND node_id = $2`, upsertReviewThread)
	upsertCommitStatusReporting = reporting(
		`SELECT * FROM github_commit_status WHERE workspace_id = $1 AND id = $2`, upsertCommitStatus)
	upsertCheckSuiteReporting = reporting(
		`SELECT * FROM github_check_suite WHERE workspace_id = $1 AND id = $2`, upsertCheckSuite)
	upsertCheckRunReporting = reporting(
		`SELECT * FROM github_check_run WHERE workspace_id = $1 AND id = $2`, upsertCheckRun)
	setOrganizationMemberReporting = reporting(
		`SELECT * FROM github_organization_member WHERE workspace_id = $1 AND organization_id = $2 AND user_id = $3`,
		setOrganizationMember)
	setCollaboratorReporting = reporting(
		`SELECT * FROM github_repository_collaborator WHERE workspace_id = $1 AND repository_id = $2 AND user_id = $3`,
		setCollaborator)
	upsertTeamReporting = reporting(
		`SELECT * FROM github_team WHERE workspace_id = $1 AND id = $2`, upsertTeam)
	setTeamMemberReporting = reporting(
		`SELECT * FROM github_team_member WHERE workspace_id = $1 AND team_id = $2 AND user_id = $3`, setTeamMember)
	setTeamRepositoryReporting = reporting(
		`SELECT * FROM github_team_repository WHERE workspace_id = $1 AND team_id = $2 AND repository_id = $3`,
		setTeamRepository)
)

// The views' single-row reads, in the write's transaction, by the same key.
const (
	readLabelView = `
		SELECT id, repository_id, name, color, description, is_default
		FROM github_label WHERE workspace_id = $1 AND id = $2`
	readMilestoneView = `
		SELECT id, repository_id, number, title, description, state, due_on, closed_at, created_at, source_updated_at
		FROM github_milestone WHERE workspace_id = $1 AND id = $2`
	readIssueCommentView = `
		SELECT c.id, c.repository_id, c.issue_id, u.login, c.body, c.html_url, c.created_at, c.source_updated_at
		FROM github_issue_comment c
		LEFT JOIN github_user u ON u.workspace_id = c.workspace_id AND u.id = c.author_id
		WHERE c.workspace_id = $1 AND c.id = $2`
	readReviewView = `
		SELECT r.id, r.repository_id, r.pull_request_id, u.login, r.state, r.body, r.commit_id, r.submitted_at
		FROM github_review r
		LEFT JOIN github_user u ON u.workspace_id = r.workspace_id AND u.id = r.author_id
		WHERE r.workspace_id = $1 AND r.id = $2`
	readReviewCommentView = `
		SELECT c.id, c.repository_id, c.pull_request_id, c.review_id, c.in_reply_to_id, u.login, c.path, c.line,
		       c.body, c.commit_id, c.created_at, c.source_updated_at
		FROM github_review_comment c
		LEFT JOIN github_user u ON u.workspace_id = c.workspace_id AND u.id = c.author_id
		WHERE c.workspace_id = $1 AND c.id = $2`
	readReviewThreadView = `
		SELECT node_id, repository_id, pull_request_id, resolved, path, comment_ids
		FROM github_review_thread WHERE workspace_id = $1 AND node_id = $2`
	readCommitStatusView = `
		SELECT id, repository_id, sha, context, state, description, target_url, created_at, source_updated_at
		FROM github_commit_status WHERE workspace_id = $1 AND id = $2`
	readCheckSuiteView = `
		SELECT id, repository_id, head_sha, head_branch, status, conclusion, app_slug, created_at, source_updated_at
		FROM github_check_suite WHERE workspace_id = $1 AND id = $2`
	readCheckRunView = `
		SELECT id, repository_id, check_suite_id, head_sha, name, status, conclusion, started_at, completed_at
		FROM github_check_run WHERE workspace_id = $1 AND id = $2`
	readMemberView = `
		SELECT m.organization_id, m.user_id, u.login, m.role, m.state
		FROM github_organization_member m
		LEFT JOIN github_user u ON u.workspace_id = m.workspace_id AND u.id = m.user_id
		WHERE m.workspace_id = $1 AND m.organization_id = $2 AND m.user_id = $3`
	readCollaboratorView = `
		SELECT c.repository_id, c.user_id, u.login, c.permission
		FROM github_repository_collaborator c
		LEFT JOIN github_user u ON u.workspace_id = c.workspace_id AND u.id = c.user_id
		WHERE c.workspace_id = $1 AND c.repository_id = $2 AND c.user_id = $3`
	readTeamView = `
		SELECT id, organization_id, name, slug, description, privacy, permission, parent_id
		FROM github_team WHERE workspace_id = $1 AND id = $2`
	readTeamMemberView = `
		SELECT m.team_id, m.user_id, u.login
		FROM github_team_member m
		LEFT JOIN github_user u ON u.workspace_id = m.workspace_id AND u.id = m.user_id
		WHERE m.workspace_id = $1 AND m.team_id = $2 AND m.user_id = $3`
	readTeamRepositoryView = `
		SELECT team_id, repository_id, permission
		FROM github_team_repository WHERE workspace_id = $1 AND team_id = $2 AND repository_id = $3`
)

// entityWrite is one reporting upsert and the change it publishes when it changed the row.
type entityWrite struct {
	op       string
	sql      string // a reporting upsert (reporting)
	args     []any
	subject  string
	upserted change.Type
	deleted  change.Type // zero: a tombstone is published as upserted (the table never deletes)
	key      any         // a deletion's data: the entity's key; nil: the view (memberships, see below)
	// view reads the entity back in the write's transaction and shapes it.
	view func(ctx context.Context, ptx pgx.Tx) (any, error)
}

// writeEntities runs the writes in the order given (callers sort by key), each publishing its
// change when it changed the row. Without a publisher it runs the plain upsert in one batch.
func (s *Store) writeEntities(ctx context.Context, tx ports.Tx, ws int64, plain string, writes []entityWrite) error {
	if len(writes) == 0 {
		return nil
	}
	if s.feed.pub == nil {
		return batch(ctx, tx, writes[0].op, plain, writes, func(w entityWrite) []any { return w.args })
	}
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	for _, w := range writes {
		changed, deleted, version, err := upsertReportingChange(ctx, ptx, w.op, w.sql, w.args...)
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		t := w.upserted
		if deleted && !w.deleted.IsZero() {
			t = w.deleted
		}
		data := w.key
		if t == w.upserted || data == nil {
			if data, err = w.view(ctx, ptx); err != nil {
				return err
			}
		}
		if err := s.publish(ctx, tx, ws, t, w.subject, version, data); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) writeEntity(ctx context.Context, tx ports.Tx, ws int64, plain string, w entityWrite) error {
	return s.writeEntities(ctx, tx, ws, plain, []entityWrite{w})
}

// readView reads one row of a view query and shapes it.
func readView[R any](ctx context.Context, ptx pgx.Tx, op, sql string, args []any, scan func(pgx.Row) (R, error), shape func(R) any) (any, error) {
	r, err := scan(ptx.QueryRow(ctx, sql, args...))
	if err != nil {
		return nil, sqlkit.Interpret(op, err)
	}
	return shape(r), nil
}

func idSubject(entity string, id int64) string {
	return "github:" + entity + ":" + strconv.FormatInt(id, 10)
}

// A membership (organization member, collaborator, team member) is published under the
// subject of what the person is a member of, never under one naming the user's id: person
// erasure of the feed rewrites a change's data and keeps its subject. Its data, a deletion's
// too, is the view, which names the user by login, so erasure finds it.

// times scans nullable timestamps and converts them after the scan.
type times []pgtype.Timestamptz

func (t times) set(dst ...**time.Time) {
	for i, d := range dst {
		*d = timeOf(t[i])
	}
}

func (s *Store) labelWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github labels", sql: upsertLabelReporting, args: args, subject: idSubject("label", id),
		upserted: LabelUpserted, deleted: LabelDeleted, key: map[string]int64{"id": id},
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github label", readLabelView, []any{ws, id}, func(row pgx.Row) (LabelRow, error) {
				var l LabelRow
				err := row.Scan(&l.ID, &l.RepositoryID, &l.Name, &l.Color, &l.Description, &l.Default)
				return l, err
			}, s.entityViews().Label)
		},
	}
}

func (s *Store) milestoneWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github milestone", sql: upsertMilestoneReporting, args: args, subject: idSubject("milestone", id),
		upserted: MilestoneUpserted, deleted: MilestoneDeleted, key: map[string]int64{"id": id},
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github milestone", readMilestoneView, []any{ws, id}, func(row pgx.Row) (MilestoneRow, error) {
				var (
					m  MilestoneRow
					ts = make(times, 4)
				)
				err := row.Scan(&m.ID, &m.RepositoryID, &m.Number, &m.Title, &m.Description, &m.State, &ts[0], &ts[1], &ts[2], &ts[3])
				ts.set(&m.DueOn, &m.ClosedAt, &m.CreatedAt, &m.UpdatedAt)
				return m, err
			}, s.entityViews().Milestone)
		},
	}
}

func (s *Store) issueCommentWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github issue comment", sql: upsertIssueCommentReporting, args: args,
		subject: idSubject("issue_comment", id), upserted: IssueCommentUpserted, deleted: IssueCommentDeleted,
		key: map[string]int64{"id": id},
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github issue comment", readIssueCommentView, []any{ws, id}, func(row pgx.Row) (IssueCommentRow, error) {
				var (
					c  IssueCommentRow
					ts = make(times, 2)
				)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.IssueID, &c.AuthorLogin, &c.Body, &c.HTMLURL, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return c, err
			}, s.entityViews().IssueComment)
		},
	}
}

func (s *Store) reviewWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github review", sql: upsertReviewReporting, args: args, subject: idSubject("review", id),
		upserted: ReviewUpserted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github review", readReviewView, []any{ws, id}, func(row pgx.Row) (ReviewRow, error) {
				var (
					r  ReviewRow
					ts = make(times, 1)
				)
				err := row.Scan(&r.ID, &r.RepositoryID, &r.PullRequestID, &r.AuthorLogin, &r.State, &r.Body, &r.CommitID, &ts[0])
				ts.set(&r.SubmittedAt)
				return r, err
			}, s.entityViews().Review)
		},
	}
}

func (s *Store) reviewCommentWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github review comments", sql: upsertReviewCommentReporting, args: args,
		subject: idSubject("review_comment", id), upserted: ReviewCommentUpserted, deleted: ReviewCommentDeleted,
		key: map[string]int64{"id": id},
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github review comment", readReviewCommentView, []any{ws, id}, func(row pgx.Row) (ReviewCommentRow, error) {
				var (
					c  ReviewCommentRow
					ts = make(times, 2)
				)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.PullRequestID, &c.ReviewID, &c.InReplyToID, &c.AuthorLogin, &c.Path,
					&c.Line, &c.Body, &c.CommitID, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return c, err
			}, s.entityViews().ReviewComment)
		},
	}
}

func (s *Store) reviewThreadWrite(ws int64, args []any, nodeID string) entityWrite {
	return entityWrite{
		op: "upsert github review thread", sql: upsertReviewThreadReporting, args: args,
		subject: "github:review_thread:" + nodeID, upserted: ReviewThreadUpserted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github review thread", readReviewThreadView, []any{ws, nodeID}, func(row pgx.Row) (ReviewThreadRow, error) {
				var t ReviewThreadRow
				err := row.Scan(&t.NodeID, &t.RepositoryID, &t.PullRequestID, &t.Resolved, &t.Path, &t.CommentIDs)
				if t.CommentIDs == nil {
					t.CommentIDs = []int64{}
				}
				return t, err
			}, s.entityViews().ReviewThread)
		},
	}
}

func (s *Store) commitStatusWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github commit status", sql: upsertCommitStatusReporting, args: args,
		subject: idSubject("commit_status", id), upserted: CommitStatusUpserted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github commit status", readCommitStatusView, []any{ws, id}, func(row pgx.Row) (CommitStatusRow, error) {
				var (
					c  CommitStatusRow
					ts = make(times, 2)
				)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.SHA, &c.Context, &c.State, &c.Description, &c.TargetURL, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return c, err
			}, s.entityViews().CommitStatus)
		},
	}
}

func (s *Store) checkSuiteWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github check suite", sql: upsertCheckSuiteReporting, args: args,
		subject: idSubject("check_suite", id), upserted: CheckSuiteUpserted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github check suite", readCheckSuiteView, []any{ws, id}, func(row pgx.Row) (CheckSuiteRow, error) {
				var (
					c  CheckSuiteRow
					ts = make(times, 2)
				)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.HeadSHA, &c.HeadBranch, &c.Status, &c.Conclusion, &c.AppSlug, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return c, err
			}, s.entityViews().CheckSuite)
		},
	}
}

func (s *Store) checkRunWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github check runs", sql: upsertCheckRunReporting, args: args,
		subject: idSubject("check_run", id), upserted: CheckRunUpserted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github check run", readCheckRunView, []any{ws, id}, func(row pgx.Row) (CheckRunRow, error) {
				var (
					r  CheckRunRow
					ts = make(times, 2)
				)
				err := row.Scan(&r.ID, &r.RepositoryID, &r.CheckSuiteID, &r.HeadSHA, &r.Name, &r.Status, &r.Conclusion, &ts[0], &ts[1])
				ts.set(&r.StartedAt, &r.CompletedAt)
				return r, err
			}, s.entityViews().CheckRun)
		},
	}
}

func (s *Store) memberWrite(ws int64, args []any, orgID, userID int64) entityWrite {
	return entityWrite{
		op: "set github organization member", sql: setOrganizationMemberReporting, args: args,
		subject: idSubject("organization", orgID), upserted: MemberUpserted, deleted: MemberDeleted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github organization member", readMemberView, []any{ws, orgID, userID}, func(row pgx.Row) (MemberRow, error) {
				var m MemberRow
				err := row.Scan(&m.OrganizationID, &m.UserID, &m.Login, &m.Role, &m.State)
				return m, err
			}, s.entityViews().Member)
		},
	}
}

func (s *Store) collaboratorWrite(ws int64, args []any, repoID, userID int64) entityWrite {
	return entityWrite{
		op: "set github collaborator", sql: setCollaboratorReporting, args: args,
		subject: idSubject("repository", repoID), upserted: CollaboratorUpserted, deleted: CollaboratorDeleted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github collaborator", readCollaboratorView, []any{ws, repoID, userID}, func(row pgx.Row) (CollaboratorRow, error) {
				var c CollaboratorRow
				err := row.Scan(&c.RepositoryID, &c.UserID, &c.Login, &c.Permission)
				return c, err
			}, s.entityViews().Collaborator)
		},
	}
}

func (s *Store) teamWrite(ws int64, args []any, id int64) entityWrite {
	return entityWrite{
		op: "upsert github team", sql: upsertTeamReporting, args: args, subject: idSubject("team", id),
		upserted: TeamUpserted, deleted: TeamDeleted, key: map[string]int64{"id": id},
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github team", readTeamView, []any{ws, id}, func(row pgx.Row) (TeamRow, error) {
				var t TeamRow
				err := row.Scan(&t.ID, &t.OrganizationID, &t.Name, &t.Slug, &t.Description, &t.Privacy, &t.Permission, &t.ParentID)
				return t, err
			}, s.entityViews().Team)
		},
	}
}

func (s *Store) teamMemberWrite(ws int64, args []any, teamID, userID int64) entityWrite {
	return entityWrite{
		op: "set github team member", sql: setTeamMemberReporting, args: args,
		subject: idSubject("team", teamID), upserted: TeamMemberUpserted, deleted: TeamMemberDeleted,
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github team member", readTeamMemberView, []any{ws, teamID, userID}, func(row pgx.Row) (TeamMemberRow, error) {
				var m TeamMemberRow
				err := row.Scan(&m.TeamID, &m.UserID, &m.Login)
				return m, err
			}, s.entityViews().TeamMember)
		},
	}
}

func (s *Store) teamRepositoryWrite(ws int64, args []any, teamID, repoID int64) entityWrite {
	return entityWrite{
		op: "set github team repository", sql: setTeamRepositoryReporting, args: args,
		subject:  "github:team_repository:" + strconv.FormatInt(teamID, 10) + ":" + strconv.FormatInt(repoID, 10),
		upserted: TeamRepositoryUpserted,
		deleted:  TeamRepositoryDeleted, key: map[string]int64{"teamId": teamID, "repositoryId": repoID},
		view: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return readView(ctx, ptx, "read github team repository", readTeamRepositoryView, []any{ws, teamID, repoID}, func(row pgx.Row) (TeamRepositoryRow, error) {
				var r TeamRepositoryRow
				err := row.Scan(&r.TeamID, &r.RepositoryID, &r.Permission)
				return r, err
			}, s.entityViews().TeamRepository)
		},
	}
}

// entityViews is the views' shaping of the other entities.
func (s *Store) entityViews() EntityViews { return s.feed.views }

// refreshChecksReporting is refreshPullRequestChecks telling whether the check state the pull
// request view shows (its state for the mirrored head) changed.
var refreshChecksReporting = strings.Replace(refreshPullRequestChecks, "WITH pr AS (",
	"WITH prior AS (SELECT head_sha, state FROM github_pull_request_checks WHERE workspace_id = $1 AND pull_request_id = $2), pr AS (", 1) + `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE (p.head_sha, p.state) = (github_pull_request_checks.head_sha, github_pull_request_checks.state))`

// refreshChecksPublishing refreshes a pull request's check state and, when the state its view
// shows changed, publishes github.pull_request.upserted with the view.
func (s *Store) refreshChecksPublishing(ctx context.Context, tx ports.Tx, ws, pullRequestID, eventID int64) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	var changed bool
	err = ptx.QueryRow(ctx, refreshChecksReporting, ws, pullRequestID, eventID).Scan(&changed)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !changed) {
		return nil // the pull request is not mirrored, or its check state stayed
	}
	if err != nil {
		return sqlkit.Interpret("refresh github pull request checks", err)
	}
	return s.publishPullRequest(ctx, ptx, tx, ws, pullRequestID)
}
