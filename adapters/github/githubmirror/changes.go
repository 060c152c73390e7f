package githubmirror

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
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

// feed is the store's publisher with the read API's shaping; zero: nothing is published.
type feed struct {
	pub     ports.ChangePublisher
	remover ports.ChangeRemover
	views   Views
}

// PublishChanges makes the store publish its issue, pull request and commit changes through
// pub, shaped by views. Call it once, before the store is used.
func (s *Store) PublishChanges(pub ports.ChangePublisher, views Views) error {
	if pub == nil || views == nil {
		return errors.New("github mirror: a publisher and the read API's views are required")
	}
	remover, ok := pub.(ports.ChangeRemover)
	if !ok {
		return errors.New("github mirror: the publisher must also remove torn-down changes (ports.ChangeRemover)")
	}
	s.feed = feed{pub: pub, remover: remover, views: views}
	return nil
}

// publishTeardown removes the data of the torn-down changes sel selects and publishes
// connection.torn_down with what went, in the teardown's transaction.
func (s *Store) publishTeardown(ctx context.Context, tx ports.Tx, ws, conn int64, sel ports.ChangeSelection,
	resources []change.TornDownResource, everything bool) error {
	if s.feed.pub == nil {
		return nil
	}
	return ports.PublishTeardown(ctx, tx, s.feed.pub, s.feed.remover, ws, sel, change.TornDown{
		ConnectionID: conn, Provider: github.Provider.String(), Resources: resources, Everything: everything})
}

// prior (the WITH of each reporting upsert) reads the stored row the upsert is about to
// write, in the same statement; changedRow tells whether the row the upsert wrote differs from
// it in anything but the event id that wrote it (a new row always does), and the version the
// row now has (the change's version). A row the version rule refused returns nothing.
var (
	changedRow = `
RETURNING NOT EXISTS (SELECT 1 FROM prior p
	WHERE to_jsonb(p) - 'source_event_id' = to_jsonb(t) - 'source_event_id'), t.deleted, ` + sqlkit.MirrorVersion("t")

	upsertIssueReportingChange = `
WITH prior AS (SELECT * FROM github_issue WHERE workspace_id = $1 AND id = $2)` + upsertIssue + changedRow
	upsertPullRequestReportingChange = `
WITH prior AS (SELECT * FROM github_pull_request WHERE workspace_id = $1 AND id = $2)` +
		upsertPullRequest + changedRow
	upsertCommitReportingChange = `
WITH prior AS (SELECT * FROM github_commit WHERE workspace_id = $1 AND repository_id = $2 AND sha = $3)` +
		upsertCommit + changedRow

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

// upsertReportingChange runs a reporting upsert and tells whether it changed the row, whether
// the row is now a tombstone and the row's version.
func upsertReportingChange(ctx context.Context, tx pgx.Tx, op, sql string, args ...any) (changed, deleted bool, version string, err error) {
	err = tx.QueryRow(ctx, sql, args...).Scan(&changed, &deleted, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, "", nil // lost to the version rule
	}
	return changed, deleted, version, sqlkit.Interpret(op, err)
}

// publish publishes a change of the entity whose stored version is version.
func (s *Store) publish(ctx context.Context, tx ports.Tx, ws int64, t change.Type, subject, version string, data any) error {
	c, err := change.NewVersioned(t, subject, version, data)
	if err != nil {
		return err
	}
	return s.feed.pub.Publish(ctx, tx, ws, c)
}

func (s *Store) upsertIssuePublishing(ctx context.Context, tx ports.Tx, ws int64, args []any, id int64) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	changed, deleted, version, err := upsertReportingChange(ctx, ptx, "upsert github issue", upsertIssueReportingChange, args...)
	if err != nil || !changed {
		return err
	}
	subject := "github:issue:" + strconv.FormatInt(id, 10)
	if deleted {
		return s.publish(ctx, tx, ws, IssueDeleted, subject, version, map[string]int64{"id": id})
	}
	var (
		i                          IssueRow
		created, updated, closedAt pgtype.Timestamptz
	)
	err = ptx.QueryRow(ctx, readIssueView, ws, id).Scan(&i.ID, &i.Number, &i.Title, &i.State, &i.StateReason, &i.Locked,
		&i.AuthorLogin, &i.Labels, &i.CommentCount, &i.HTMLURL, &created, &updated, &closedAt)
	if err != nil {
		return sqlkit.Interpret("read github issue", err)
	}
	i.CreatedAt, i.UpdatedAt, i.ClosedAt = timeOf(created), timeOf(updated), timeOf(closedAt)
	if i.Labels == nil {
		i.Labels = []string{}
	}
	return s.publish(ctx, tx, ws, IssueUpserted, subject, version, s.feed.views.Issue(i))
}

func (s *Store) upsertPullRequestPublishing(ctx context.Context, ptx pgx.Tx, tx ports.Tx, ws int64, args []any, id int64) error {
	changed, _, _, err := upsertReportingChange(ctx, ptx, "upsert github pull request", upsertPullRequestReportingChange, args...)
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
	return s.publish(ctx, tx, ws, PullRequestUpserted, "github:pull_request:"+strconv.FormatInt(id, 10), version, s.feed.views.PullRequest(p))
}

func (s *Store) upsertCommitPublishing(ctx context.Context, tx ports.Tx, ws int64, args []any, repositoryID int64, sha string) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	changed, _, version, err := upsertReportingChange(ctx, ptx, "upsert github commit", upsertCommitReportingChange, args...)
	if err != nil || !changed {
		return err
	}
	var (
		c         CommitRow
		committed pgtype.Timestamptz
	)
	err = ptx.QueryRow(ctx, readCommitView, ws, repositoryID, sha).Scan(&c.SHA, &c.Message, &c.AuthorName, &c.AuthorLogin,
		&committed, &c.HTMLURL)
	if err != nil {
		return sqlkit.Interpret("read github commit", err)
	}
	c.CommittedAt = timeOf(committed)
	return s.publish(ctx, tx, ws, CommitUpserted,
		"github:commit:"+strconv.FormatInt(repositoryID, 10)+":"+sha, version, s.feed.views.Commit(c))
}
