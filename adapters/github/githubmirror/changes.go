package githubmirror

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Publishing to the change feed (CONTRACT.md "Change feed"). With a publisher set, the issue,
// pull request and commit upserts report whether they changed the row: whether the version
// rule let them write and what they wrote differs from the stored row in anything but the
// event id (a new row always differs; a newer source_updated_at is a change). A write that
// lost to the version rule, or that wrote what was stored (a redelivery, a replay, another
// event or a repeated sync page carrying the same state), changed nothing and publishes
// nothing. A change is published in the write's own transaction (the
// handler's named step), with the entity as the read API shows it (Views).

// The change types this store publishes.
var (
	IssueUpserted       = change.MustType("github.issue.upserted")
	IssueDeleted        = change.MustType("github.issue.deleted")
	PullRequestUpserted = change.MustType("github.pull_request.upserted")
	CommitUpserted      = change.MustType("github.commit.upserted")
)

// Views shapes mirrored rows as the read API shows them (adapters/github/githubread.Views), so a
// change's data and the read API cannot disagree.
type Views interface {
	Issue(IssueRow) any
	PullRequest(PullRequestRow) any
	Commit(CommitRow) any
	EntityViews
	StructureViews
	InstallationViews
}

// PublishChanges makes the store publish its changes through pub, shaped by views. Call it
// once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	return s.feed.Set("github", pub, views)
}

// The reporting upserts (mirrorkit.Reporting) of issues, pull requests and commits.
var (
	upsertIssueReporting = mirrorkit.Reporting(
		`SELECT * FROM github_issue WHERE workspace_id = $1 AND id = $2`, upsertIssue)
	upsertPullRequestReporting = mirrorkit.Reporting(
		`SELECT * FROM github_pull_request WHERE workspace_id = $1 AND id = $2`, upsertPullRequest)
	upsertCommitReporting = mirrorkit.Reporting(
		`SELECT * FROM github_commit WHERE workspace_id = $1 AND repository_id = $2 AND sha = $3`, upsertCommit)

	// The single-row reads (the pull request's with its version: its change is also published
	// when only its check state changed) of the read API's lists (reads.go), in the write's transaction.
	readIssueView = `
		SELECT i.id, i.number, i.title, i.state, i.state_reason, i.locked, u.login,
		       ARRAY(SELECT l.name FROM github_label l
		             WHERE l.workspace_id = i.workspace_id AND l.id = ANY (i.label_ids) AND NOT l.deleted
		             ORDER BY l.name),
		       i.comment_count, i.html_url, i.created_at, i.source_updated_at, i.closed_at
		FROM github_issue i
		LEFT JOIN github_user u ON u.workspace_id = i.workspace_id AND u.id = i.author_id
		WHERE i.workspace_id = $1 AND i.id = $2`
	readPullRequestView = `
		SELECT p.id, p.number, p.title, p.state, p.draft, p.merged, u.login, p.head_ref, p.head_sha, p.base_ref,
		       p.html_url, c.state, p.created_at, p.source_updated_at, p.closed_at, p.merged_at, ` + sqlkit.MirrorVersion("p") + `
		FROM github_pull_request p
		LEFT JOIN github_user u ON u.workspace_id = p.workspace_id AND u.id = p.author_id
		LEFT JOIN github_pull_request_checks c ON c.workspace_id = p.workspace_id AND c.pull_request_id = p.id
		     AND c.head_sha = p.head_sha
		WHERE p.workspace_id = $1 AND p.id = $2`
	readCommitView = `
		SELECT sha, message, author_name, author_login, committed_at, html_url
		FROM github_commit WHERE workspace_id = $1 AND repository_id = $2 AND sha = $3`
)

func (s *Store) issueWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github issue", Plain: upsertIssue, SQL: upsertIssueReporting, Args: args, Subject: idSubject("issue", id),
		Upserted: IssueUpserted, Deleted: IssueDeleted, Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github issue", readIssueView, []any{ws, id}, func(row pgx.Row, i *IssueRow) error {
				ts := make(times, 3)
				err := row.Scan(&i.ID, &i.Number, &i.Title, &i.State, &i.StateReason, &i.Locked, &i.AuthorLogin, &i.Labels,
					&i.CommentCount, &i.HTMLURL, &ts[0], &ts[1], &ts[2])
				ts.set(&i.CreatedAt, &i.UpdatedAt, &i.ClosedAt)
				if i.Labels == nil {
					i.Labels = []string{}
				}
				return err
			}, s.feed.Views().Issue)
		},
	}
}

func (s *Store) upsertPullRequestPublishing(ctx context.Context, ptx pgx.Tx, tx ports.Tx, ws int64, args []any, id int64) error {
	changed, _, _, err := mirrorkit.Report(ctx, ptx, "upsert github pull request", upsertPullRequestReporting, args...)
	if err != nil || !changed {
		return err
	}
	return s.publishPullRequest(ctx, ptx, tx, ws, id)
}

// publishPullRequest publishes the pull request as the read API shows it now (in ptx).
func (s *Store) publishPullRequest(ctx context.Context, ptx pgx.Tx, tx ports.Tx, ws, id int64) error {
	var (
		p                                  PullRequestRow
		created, updated, closedAt, merged pgtype.Timestamptz
		version                            string
	)
	err := ptx.QueryRow(ctx, readPullRequestView, ws, id).Scan(&p.ID, &p.Number, &p.Title, &p.State, &p.Draft, &p.Merged,
		&p.AuthorLogin, &p.HeadRef, &p.HeadSHA, &p.BaseRef, &p.HTMLURL, &p.ChecksState, &created, &updated, &closedAt, &merged,
		&version)
	if err != nil {
		return sqlkit.Interpret("read github pull request", err)
	}
	p.CreatedAt, p.UpdatedAt, p.ClosedAt, p.MergedAt = timeOf(created), timeOf(updated), timeOf(closedAt), timeOf(merged)
	return s.feed.Publish(ctx, tx, ws, PullRequestUpserted, "github:pull_request:"+strconv.FormatInt(id, 10), version, s.feed.Views().PullRequest(p))
}

func (s *Store) commitWrite(ws int64, args []any, repositoryID int64, sha string) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github commit", Plain: upsertCommit, SQL: upsertCommitReporting, Args: args,
		Subject: "github:commit:" + strconv.FormatInt(repositoryID, 10) + ":" + sha, Upserted: CommitUpserted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github commit", readCommitView, []any{ws, repositoryID, sha}, func(row pgx.Row, c *CommitRow) error {
				ts := make(times, 1)
				err := row.Scan(&c.SHA, &c.Message, &c.AuthorName, &c.AuthorLogin, &ts[0], &c.HTMLURL)
				ts.set(&c.CommittedAt)
				return err
			}, s.feed.Views().Commit)
		},
	}
}
