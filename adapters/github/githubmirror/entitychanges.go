package githubmirror

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
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

var (
	upsertLabelReporting = mirrorkit.Reporting(
		`SELECT * FROM github_label WHERE workspace_id = $1 AND id = $2`, upsertLabel)
	upsertMilestoneReporting = mirrorkit.Reporting(
		`SELECT * FROM github_milestone WHERE workspace_id = $1 AND id = $2`, upsertMilestone)
	upsertIssueCommentReporting = mirrorkit.Reporting(
		`SELECT * FROM github_issue_comment WHERE workspace_id = $1 AND id = $2`, upsertIssueComment)
	upsertReviewReporting = mirrorkit.Reporting(
		`SELECT * FROM github_review WHERE workspace_id = $1 AND id = $2`, upsertReview)
	upsertReviewCommentReporting = mirrorkit.Reporting(
		`SELECT * FROM github_review_comment WHERE workspace_id = $1 AND id = $2`, upsertReviewComment)
	upsertReviewThreadReporting = mirrorkit.Reporting(
		`SELECT * FROM github_review_thread WHERE workspace_id = $1 AND node_id = $2`, upsertReviewThread)
	upsertCommitStatusReporting = mirrorkit.Reporting(
		`SELECT * FROM github_commit_status WHERE workspace_id = $1 AND id = $2`, upsertCommitStatus)
	upsertCheckSuiteReporting = mirrorkit.Reporting(
		`SELECT * FROM github_check_suite WHERE workspace_id = $1 AND id = $2`, upsertCheckSuite)
	upsertCheckRunReporting = mirrorkit.Reporting(
		`SELECT * FROM github_check_run WHERE workspace_id = $1 AND id = $2`, upsertCheckRun)
	setOrganizationMemberReporting = mirrorkit.Reporting(
		`SELECT * FROM github_organization_member WHERE workspace_id = $1 AND organization_id = $2 AND user_id = $3`,
		setOrganizationMember)
	setCollaboratorReporting = mirrorkit.Reporting(
		`SELECT * FROM github_repository_collaborator WHERE workspace_id = $1 AND repository_id = $2 AND user_id = $3`,
		setCollaborator)
	upsertTeamReporting = mirrorkit.Reporting(
		`SELECT * FROM github_team WHERE workspace_id = $1 AND id = $2`, upsertTeam)
	setTeamMemberReporting = mirrorkit.Reporting(
		`SELECT * FROM github_team_member WHERE workspace_id = $1 AND team_id = $2 AND user_id = $3`, setTeamMember)
	setTeamRepositoryReporting = mirrorkit.Reporting(
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

func (s *Store) labelWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github labels", Plain: upsertLabel, SQL: upsertLabelReporting, Args: args, Subject: idSubject("label", id),
		Upserted: LabelUpserted, Deleted: LabelDeleted, Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github label", readLabelView, []any{ws, id}, func(row pgx.Row, l *LabelRow) error {
				err := row.Scan(&l.ID, &l.RepositoryID, &l.Name, &l.Color, &l.Description, &l.Default)
				return err
			}, s.entityViews().Label)
		},
	}
}

func (s *Store) milestoneWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github milestone", Plain: upsertMilestone, SQL: upsertMilestoneReporting, Args: args, Subject: idSubject("milestone", id),
		Upserted: MilestoneUpserted, Deleted: MilestoneDeleted, Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github milestone", readMilestoneView, []any{ws, id}, func(row pgx.Row, m *MilestoneRow) error {
				ts := make(times, 4)
				err := row.Scan(&m.ID, &m.RepositoryID, &m.Number, &m.Title, &m.Description, &m.State, &ts[0], &ts[1], &ts[2], &ts[3])
				ts.set(&m.DueOn, &m.ClosedAt, &m.CreatedAt, &m.UpdatedAt)
				return err
			}, s.entityViews().Milestone)
		},
	}
}

func (s *Store) issueCommentWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github issue comment", Plain: upsertIssueComment, SQL: upsertIssueCommentReporting, Args: args,
		Subject: idSubject("issue_comment", id), Upserted: IssueCommentUpserted, Deleted: IssueCommentDeleted,
		Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github issue comment", readIssueCommentView, []any{ws, id}, func(row pgx.Row, c *IssueCommentRow) error {
				ts := make(times, 2)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.IssueID, &c.AuthorLogin, &c.Body, &c.HTMLURL, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return err
			}, s.entityViews().IssueComment)
		},
	}
}

func (s *Store) reviewWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github review", Plain: upsertReview, SQL: upsertReviewReporting, Args: args, Subject: idSubject("review", id),
		Upserted: ReviewUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github review", readReviewView, []any{ws, id}, func(row pgx.Row, r *ReviewRow) error {
				ts := make(times, 1)
				err := row.Scan(&r.ID, &r.RepositoryID, &r.PullRequestID, &r.AuthorLogin, &r.State, &r.Body, &r.CommitID, &ts[0])
				ts.set(&r.SubmittedAt)
				return err
			}, s.entityViews().Review)
		},
	}
}

func (s *Store) reviewCommentWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github review comments", Plain: upsertReviewComment, SQL: upsertReviewCommentReporting, Args: args,
		Subject: idSubject("review_comment", id), Upserted: ReviewCommentUpserted, Deleted: ReviewCommentDeleted,
		Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github review comment", readReviewCommentView, []any{ws, id}, func(row pgx.Row, c *ReviewCommentRow) error {
				ts := make(times, 2)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.PullRequestID, &c.ReviewID, &c.InReplyToID, &c.AuthorLogin, &c.Path,
					&c.Line, &c.Body, &c.CommitID, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return err
			}, s.entityViews().ReviewComment)
		},
	}
}

func (s *Store) reviewThreadWrite(ws int64, args []any, nodeID string) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github review thread", Plain: upsertReviewThread, SQL: upsertReviewThreadReporting, Args: args,
		Subject: "github:review_thread:" + nodeID, Upserted: ReviewThreadUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github review thread", readReviewThreadView, []any{ws, nodeID}, func(row pgx.Row, t *ReviewThreadRow) error {
				err := row.Scan(&t.NodeID, &t.RepositoryID, &t.PullRequestID, &t.Resolved, &t.Path, &t.CommentIDs)
				if t.CommentIDs == nil {
					t.CommentIDs = []int64{}
				}
				return err
			}, s.entityViews().ReviewThread)
		},
	}
}

func (s *Store) commitStatusWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github commit status", Plain: upsertCommitStatus, SQL: upsertCommitStatusReporting, Args: args,
		Subject: idSubject("commit_status", id), Upserted: CommitStatusUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github commit status", readCommitStatusView, []any{ws, id}, func(row pgx.Row, c *CommitStatusRow) error {
				ts := make(times, 2)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.SHA, &c.Context, &c.State, &c.Description, &c.TargetURL, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return err
			}, s.entityViews().CommitStatus)
		},
	}
}

func (s *Store) checkSuiteWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github check suite", Plain: upsertCheckSuite, SQL: upsertCheckSuiteReporting, Args: args,
		Subject: idSubject("check_suite", id), Upserted: CheckSuiteUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github check suite", readCheckSuiteView, []any{ws, id}, func(row pgx.Row, c *CheckSuiteRow) error {
				ts := make(times, 2)
				err := row.Scan(&c.ID, &c.RepositoryID, &c.HeadSHA, &c.HeadBranch, &c.Status, &c.Conclusion, &c.AppSlug, &ts[0], &ts[1])
				ts.set(&c.CreatedAt, &c.UpdatedAt)
				return err
			}, s.entityViews().CheckSuite)
		},
	}
}

func (s *Store) checkRunWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github check runs", Plain: upsertCheckRun, SQL: upsertCheckRunReporting, Args: args,
		Subject: idSubject("check_run", id), Upserted: CheckRunUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github check run", readCheckRunView, []any{ws, id}, func(row pgx.Row, r *CheckRunRow) error {
				ts := make(times, 2)
				err := row.Scan(&r.ID, &r.RepositoryID, &r.CheckSuiteID, &r.HeadSHA, &r.Name, &r.Status, &r.Conclusion, &ts[0], &ts[1])
				ts.set(&r.StartedAt, &r.CompletedAt)
				return err
			}, s.entityViews().CheckRun)
		},
	}
}

func (s *Store) memberWrite(ws int64, args []any, orgID, userID int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github organization member", Plain: setOrganizationMember, SQL: setOrganizationMemberReporting, Args: args,
		Subject: idSubject("organization", orgID), Upserted: MemberUpserted, Deleted: MemberDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github organization member", readMemberView, []any{ws, orgID, userID}, func(row pgx.Row, m *MemberRow) error {
				err := row.Scan(&m.OrganizationID, &m.UserID, &m.Login, &m.Role, &m.State)
				return err
			}, s.entityViews().Member)
		},
	}
}

func (s *Store) collaboratorWrite(ws int64, args []any, repoID, userID int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github collaborator", Plain: setCollaborator, SQL: setCollaboratorReporting, Args: args,
		Subject: idSubject("repository", repoID), Upserted: CollaboratorUpserted, Deleted: CollaboratorDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github collaborator", readCollaboratorView, []any{ws, repoID, userID}, func(row pgx.Row, c *CollaboratorRow) error {
				err := row.Scan(&c.RepositoryID, &c.UserID, &c.Login, &c.Permission)
				return err
			}, s.entityViews().Collaborator)
		},
	}
}

func (s *Store) teamWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github team", Plain: upsertTeam, SQL: upsertTeamReporting, Args: args, Subject: idSubject("team", id),
		Upserted: TeamUpserted, Deleted: TeamDeleted, Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github team", readTeamView, []any{ws, id}, func(row pgx.Row, t *TeamRow) error {
				err := row.Scan(&t.ID, &t.OrganizationID, &t.Name, &t.Slug, &t.Description, &t.Privacy, &t.Permission, &t.ParentID)
				return err
			}, s.entityViews().Team)
		},
	}
}

func (s *Store) teamMemberWrite(ws int64, args []any, teamID, userID int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github team member", Plain: setTeamMember, SQL: setTeamMemberReporting, Args: args,
		Subject: idSubject("team", teamID), Upserted: TeamMemberUpserted, Deleted: TeamMemberDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github team member", readTeamMemberView, []any{ws, teamID, userID}, func(row pgx.Row, m *TeamMemberRow) error {
				err := row.Scan(&m.TeamID, &m.UserID, &m.Login)
				return err
			}, s.entityViews().TeamMember)
		},
	}
}

func (s *Store) teamRepositoryWrite(ws int64, args []any, teamID, repoID int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github team repository", Plain: setTeamRepository, SQL: setTeamRepositoryReporting, Args: args,
		Subject:  "github:team_repository:" + strconv.FormatInt(teamID, 10) + ":" + strconv.FormatInt(repoID, 10),
		Upserted: TeamRepositoryUpserted,
		Deleted:  TeamRepositoryDeleted, Key: map[string]int64{"teamId": teamID, "repositoryId": repoID},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github team repository", readTeamRepositoryView, []any{ws, teamID, repoID}, func(row pgx.Row, r *TeamRepositoryRow) error {
				err := row.Scan(&r.TeamID, &r.RepositoryID, &r.Permission)
				return err
			}, s.entityViews().TeamRepository)
		},
	}
}

// entityViews is the views' shaping of the other entities.
func (s *Store) entityViews() EntityViews { return s.feed.Views() }

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
