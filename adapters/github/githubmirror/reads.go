package githubmirror

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The read side of the mirror, for the read API. Every query binds the workspace, and a
// repository's lists bind the repository too, so nothing of another workspace can be read by
// naming its ids. Tombstones are never read.

// RepositoryRow is a mirrored repository.
type RepositoryRow struct {
	ID            int64
	OwnerLogin    string
	Name          string
	FullName      string
	Private       bool
	Visibility    string
	DefaultBranch string
	Archived      bool
	Fork          bool
	Description   *string
	HTMLURL       string
	PushedAt      *time.Time
	UpdatedAt     *time.Time
}

// IssueRow is a mirrored issue with its author's login and its label names.
type IssueRow struct {
	ID           int64
	Number       int
	Title        string
	State        string
	StateReason  *string
	Locked       bool
	AuthorLogin  *string
	Labels       []string
	CommentCount int
	HTMLURL      string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
	ClosedAt     *time.Time
}

// PullRequestRow is a mirrored pull request with its author's login and its check state.
type PullRequestRow struct {
	ID          int64
	Number      int
	Title       string
	State       string
	Draft       bool
	Merged      bool
	AuthorLogin *string
	HeadRef     string
	HeadSHA     string
	BaseRef     string
	HTMLURL     string
	ChecksState *string
	CreatedAt   *time.Time
	UpdatedAt   *time.Time
	ClosedAt    *time.Time
	MergedAt    *time.Time
}

// CommitRow is a mirrored commit. It carries no e-mail address: the read API has no need for
// one.
type CommitRow struct {
	SHA         string
	Message     string
	AuthorName  string
	AuthorLogin *string
	CommittedAt *time.Time
	HTMLURL     string
}

const (
	countRepositories = `SELECT count(*) FROM github_repository WHERE workspace_id = $1 AND NOT deleted`
	listRepositories  = `
		SELECT id, owner_login, name, full_name, private, visibility, default_branch, archived, fork,
		       description, html_url, pushed_at, source_updated_at
		FROM github_repository WHERE workspace_id = $1 AND NOT deleted
		ORDER BY full_name, id LIMIT $2 OFFSET $3`
	repositoryExists = `SELECT EXISTS (SELECT 1 FROM github_repository WHERE workspace_id = $1 AND id = $2 AND NOT deleted)`

	countIssues = `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND repository_id = $2 AND NOT deleted`
	listIssues  = `
		SELECT i.id, i.number, i.title, i.state, i.state_reason, i.locked, u.login,
		       ARRAY(SELECT l.name FROM github_label l
		             WHERE l.workspace_id = i.workspace_id AND l.id = ANY (i.label_ids) AND NOT l.deleted
		             ORDER BY l.name),
		       i.comment_count, i.html_url, i.created_at, i.source_updated_at, i.closed_at
		FROM github_issue i
		LEFT JOIN github_user u ON u.workspace_id = i.workspace_id AND u.id = i.author_id
		WHERE i.workspace_id = $1 AND i.repository_id = $2 AND NOT i.deleted
		ORDER BY i.number DESC LIMIT $3 OFFSET $4`

	countPulls = `SELECT count(*) FROM github_pull_request WHERE workspace_id = $1 AND repository_id = $2 AND NOT deleted`
	listPulls  = `
		SELECT p.id, p.number, p.title, p.state, p.draft, p.merged, u.login, p.head_ref, p.head_sha, p.base_ref,
		       p.html_url, c.state, p.created_at, p.source_updated_at, p.closed_at, p.merged_at
		FROM github_pull_request p
		LEFT JOIN github_user u ON u.workspace_id = p.workspace_id AND u.id = p.author_id
		LEFT JOIN github_pull_request_checks c ON c.workspace_id = p.workspace_id AND c.pull_request_id = p.id
		     AND c.head_sha = p.head_sha
		WHERE p.workspace_id = $1 AND p.repository_id = $2 AND NOT p.deleted
		ORDER BY p.number DESC LIMIT $3 OFFSET $4`

	countCommits = `SELECT count(*) FROM github_commit WHERE workspace_id = $1 AND repository_id = $2 AND NOT deleted`
	listCommits  = `
		SELECT sha, message, author_name, author_login, committed_at, html_url
		FROM github_commit WHERE workspace_id = $1 AND repository_id = $2 AND NOT deleted
		ORDER BY committed_at DESC NULLS LAST, sha LIMIT $3 OFFSET $4`
)

// Repositories pages the workspace's mirrored repositories by full name and counts them.
func (s *Store) Repositories(ctx context.Context, ws int64, page ports.PageRequest) ([]RepositoryRow, int, error) {
	return pageOf(ctx, s, "list github repositories", countRepositories, listRepositories, []any{ws}, page,
		func(row pgx.CollectableRow) (RepositoryRow, error) {
			var (
				r         RepositoryRow
				pushed    pgtype.Timestamptz
				updatedAt pgtype.Timestamptz
			)
			err := row.Scan(&r.ID, &r.OwnerLogin, &r.Name, &r.FullName, &r.Private, &r.Visibility, &r.DefaultBranch,
				&r.Archived, &r.Fork, &r.Description, &r.HTMLURL, &pushed, &updatedAt)
			r.PushedAt, r.UpdatedAt = timeOf(pushed), timeOf(updatedAt)
			return r, err
		})
}

// RequireRepository checks that the workspace mirrors the repository. Errors:
// ports.ErrNotFound (also for a repository of another workspace).
func (s *Store) RequireRepository(ctx context.Context, ws, repositoryID int64) error {
	var ok bool
	if err := s.pool.QueryRow(ctx, repositoryExists, ws, repositoryID).Scan(&ok); err != nil {
		return sqlkit.Interpret("read github repository", err)
	}
	if !ok {
		return fmt.Errorf("github repository %d: %w", repositoryID, ports.ErrNotFound)
	}
	return nil
}

// Issues pages a mirrored repository's issues, newest number first. Errors: ports.ErrNotFound
// when the workspace does not mirror the repository.
func (s *Store) Issues(ctx context.Context, ws, repositoryID int64, page ports.PageRequest) ([]IssueRow, int, error) {
	if err := s.RequireRepository(ctx, ws, repositoryID); err != nil {
		return nil, 0, err
	}
	return pageOf(ctx, s, "list github issues", countIssues, listIssues, []any{ws, repositoryID}, page,
		func(row pgx.CollectableRow) (IssueRow, error) {
			var (
				i                          IssueRow
				created, updated, closedAt pgtype.Timestamptz
			)
			err := row.Scan(&i.ID, &i.Number, &i.Title, &i.State, &i.StateReason, &i.Locked, &i.AuthorLogin, &i.Labels,
				&i.CommentCount, &i.HTMLURL, &created, &updated, &closedAt)
			i.CreatedAt, i.UpdatedAt, i.ClosedAt = timeOf(created), timeOf(updated), timeOf(closedAt)
			if i.Labels == nil {
				i.Labels = []string{}
			}
			return i, err
		})
}

// PullRequests pages a mirrored repository's pull requests, newest number first. Errors:
// ports.ErrNotFound when the workspace does not mirror the repository.
func (s *Store) PullRequests(ctx context.Context, ws, repositoryID int64, page ports.PageRequest) ([]PullRequestRow, int, error) {
	if err := s.RequireRepository(ctx, ws, repositoryID); err != nil {
		return nil, 0, err
	}
	return pageOf(ctx, s, "list github pull requests", countPulls, listPulls, []any{ws, repositoryID}, page,
		func(row pgx.CollectableRow) (PullRequestRow, error) {
			var (
				p                                  PullRequestRow
				created, updated, closedAt, merged pgtype.Timestamptz
			)
			err := row.Scan(&p.ID, &p.Number, &p.Title, &p.State, &p.Draft, &p.Merged, &p.AuthorLogin, &p.HeadRef,
				&p.HeadSHA, &p.BaseRef, &p.HTMLURL, &p.ChecksState, &created, &updated, &closedAt, &merged)
			p.CreatedAt, p.UpdatedAt, p.ClosedAt, p.MergedAt = timeOf(created), timeOf(updated), timeOf(closedAt), timeOf(merged)
			return p, err
		})
}

// Commits pages a mirrored repository's commits, newest first. Errors: ports.ErrNotFound when
// the workspace does not mirror the repository.
func (s *Store) Commits(ctx context.Context, ws, repositoryID int64, page ports.PageRequest) ([]CommitRow, int, error) {
	if err := s.RequireRepository(ctx, ws, repositoryID); err != nil {
		return nil, 0, err
	}
	return pageOf(ctx, s, "list github commits", countCommits, listCommits, []any{ws, repositoryID}, page,
		func(row pgx.CollectableRow) (CommitRow, error) {
			var (
				c         CommitRow
				committed pgtype.Timestamptz
			)
			err := row.Scan(&c.SHA, &c.Message, &c.AuthorName, &c.AuthorLogin, &committed, &c.HTMLURL)
			c.CommittedAt = timeOf(committed)
			return c, err
		})
}

// pageOf counts and reads one page in one REPEATABLE READ snapshot, so the total and the items
// agree even while handlers write.
func pageOf[T any](ctx context.Context, s *Store, op, count, list string, args []any, page ports.PageRequest,
	scan func(pgx.CollectableRow) (T, error),
) (items []T, total int, err error) {
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(ctx context.Context, tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, count, args...).Scan(&total); err != nil {
				return sqlkit.Interpret(op, err)
			}
			rows, _ := tx.Query(ctx, list, append(args, page.Size, page.Offset())...)
			items, err = pgx.CollectRows(rows, scan)
			return sqlkit.Interpret(op, err)
		})
	return items, total, err
}
