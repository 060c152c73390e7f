package githubmirror

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
)

// The change feed for repositories, organizations, refs and issue links, by the path of
// entitychanges.go. A repository is published as the read API lists it; a link (sub-issue,
// dependency) under the subject of the issue it belongs to (the parent, the blocked issue).

// The change types of the structure entities.
var (
	RepositoryUpserted      = change.MustType("github.repository.upserted")
	RepositoryDeleted       = change.MustType("github.repository.deleted")
	OrganizationUpserted    = change.MustType("github.organization.upserted")
	OrganizationDeleted     = change.MustType("github.organization.deleted")
	RefUpserted             = change.MustType("github.ref.upserted")
	RefDeleted              = change.MustType("github.ref.deleted")
	SubIssueUpserted        = change.MustType("github.sub_issue.upserted")
	SubIssueDeleted         = change.MustType("github.sub_issue.deleted")
	IssueDependencyUpserted = change.MustType("github.issue_dependency.upserted")
	IssueDependencyDeleted  = change.MustType("github.issue_dependency.deleted")
)

// StructureViews shapes the structure entities for the change feed (githubread.Views).
type StructureViews interface {
	Repository(RepositoryRow) any
	Organization(OrganizationRow) any
	Ref(RefRow) any
	SubIssue(SubIssueRow) any
	IssueDependency(IssueDependencyRow) any
}

// OrganizationRow is a mirrored organization.
type OrganizationRow struct {
	ID          int64
	Login       string
	Description *string
}

// RefRow is a mirrored branch or tag and the commit it points at.
type RefRow struct {
	RepositoryID int64
	Ref          string
	SHA          string
}

// SubIssueRow is a mirrored sub-issue link; Deleted: the link was removed.
type SubIssueRow struct {
	ParentIssueID int64
	SubIssueID    int64
	Deleted       bool
}

// IssueDependencyRow is a mirrored "blocked by" link; Deleted: the link was removed.
type IssueDependencyRow struct {
	BlockedIssueID  int64
	BlockingIssueID int64
	Deleted         bool
}

var (
	upsertRepositoryReporting = mirrorkit.Reporting(
		`SELECT * FROM github_repository WHERE workspace_id = $1 AND id = $2`, upsertRepository)
	upsertOrganizationReporting = mirrorkit.Reporting(
		`SELECT * FROM github_organization WHERE workspace_id = $1 AND id = $2`, upsertOrganization)
	setRefReporting = mirrorkit.Reporting(
		`SELECT * FROM github_ref WHERE workspace_id = $1 AND repository_id = $2 AND ref = $3`, setRef)
	setSubIssueReporting = mirrorkit.Reporting(
		`SELECT * FROM github_sub_issue WHERE workspace_id = $1 AND parent_issue_id = $2 AND sub_issue_id = $3`, setSubIssue)
	setIssueDependencyReporting = mirrorkit.Reporting(
		`SELECT * FROM github_issue_dependency WHERE workspace_id = $1 AND blocked_issue_id = $2 AND blocking_issue_id = $3`,
		setIssueDependency)
)

const (
	readRepositoryView = `
		SELECT id, owner_login, name, full_name, private, visibility, default_branch, archived, fork,
		       description, html_url, pushed_at, source_updated_at
		FROM github_repository WHERE workspace_id = $1 AND id = $2`
	readOrganizationView = `SELECT id, login, description FROM github_organization WHERE workspace_id = $1 AND id = $2`
	// readOrganizationAgainst reads, without a lock, whether the stored organization's version
	// is equal to or newer than upsertOrganization's parameters (the upsert would lose to the
	// version rule) and whether the upsert would change nothing but the event id of the
	// version (what the reporting upsert does not publish).
	readOrganizationAgainst = `SELECT ` + organizationStale + `, ` + organizationSame + `
		FROM github_organization t WHERE t.workspace_id = $1 AND t.id = $2`
	// lockOrganizationUnchanged is sent with the step's COMMIT before upsertOrganization: it
	// locks the organization (waiting for a writer ahead of it, then reading the row that
	// writer left) and aborts the step as contention (mirror_write_unchanged, migration 00120)
	// unless the upsert would still lose to the version rule or change nothing that is
	// published: the row is gone, or its content changed since the step read it.
	lockOrganizationUnchanged = `
		SELECT mirror_write_unchanged(coalesce(bool_and(u.unchanged), false) IS NOT TRUE)
		FROM (SELECT ` + organizationStale + ` OR ` + organizationSame + ` AS unchanged
		      FROM github_organization t WHERE t.workspace_id = $1 AND t.id = $2 FOR NO KEY UPDATE) u`
	organizationStale = `(t.source_updated_at, t.source_event_id) >= ($6, $7)`
	organizationSame  = `(t.login = $3 AND t.description IS NOT DISTINCT FROM $4 AND t.deleted = $5
		AND t.source_updated_at = $6)`
	readRefView             = `SELECT repository_id, ref, sha FROM github_ref WHERE workspace_id = $1 AND repository_id = $2 AND ref = $3`
	readSubIssueView        = `SELECT parent_issue_id, sub_issue_id, deleted FROM github_sub_issue WHERE workspace_id = $1 AND parent_issue_id = $2 AND sub_issue_id = $3`
	readIssueDependencyView = `SELECT blocked_issue_id, blocking_issue_id, deleted FROM github_issue_dependency WHERE workspace_id = $1 AND blocked_issue_id = $2 AND blocking_issue_id = $3`
)

func (s *Store) structureViews() StructureViews { return s.feed.Views() }

func (s *Store) repositoryWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github repository", Plain: upsertRepository, SQL: upsertRepositoryReporting, Args: args, Subject: idSubject("repository", id),
		Upserted: RepositoryUpserted, Deleted: RepositoryDeleted, Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github repository", readRepositoryView, []any{ws, id}, func(row pgx.Row, r *RepositoryRow) error {
				ts := make(times, 2)
				err := row.Scan(&r.ID, &r.OwnerLogin, &r.Name, &r.FullName, &r.Private, &r.Visibility, &r.DefaultBranch,
					&r.Archived, &r.Fork, &r.Description, &r.HTMLURL, &ts[0], &ts[1])
				ts.set(&r.PushedAt, &r.UpdatedAt)
				return err
			}, s.structureViews().Repository)
		},
	}
}

func (s *Store) organizationWrite(ws int64, args []any, id int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "upsert github organization", Plain: upsertOrganization, SQL: upsertOrganizationReporting, Args: args, Subject: idSubject("organization", id),
		Upserted: OrganizationUpserted, Deleted: OrganizationDeleted, Key: map[string]int64{"id": id},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github organization", readOrganizationView, []any{ws, id}, func(row pgx.Row, o *OrganizationRow) error {
				err := row.Scan(&o.ID, &o.Login, &o.Description)
				return err
			}, s.structureViews().Organization)
		},
	}
}

func (s *Store) refWrite(ws int64, args []any, repoID int64, ref string) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github ref", Plain: setRef, SQL: setRefReporting, Args: args,
		Subject:  "github:ref:" + strconv.FormatInt(repoID, 10) + ":" + ref,
		Upserted: RefUpserted, Deleted: RefDeleted, Key: map[string]any{"repositoryId": repoID, "ref": ref},
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github ref", readRefView, []any{ws, repoID, ref}, func(row pgx.Row, r *RefRow) error {
				err := row.Scan(&r.RepositoryID, &r.Ref, &r.SHA)
				return err
			}, s.structureViews().Ref)
		},
	}
}

func (s *Store) subIssueWrite(ws int64, args []any, parent, sub int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github sub-issue", Plain: setSubIssue, SQL: setSubIssueReporting, Args: args, Subject: idSubject("issue", parent),
		Upserted: SubIssueUpserted, Deleted: SubIssueDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github sub-issue", readSubIssueView, []any{ws, parent, sub}, func(row pgx.Row, l *SubIssueRow) error {
				err := row.Scan(&l.ParentIssueID, &l.SubIssueID, &l.Deleted)
				return err
			}, s.structureViews().SubIssue)
		},
	}
}

func (s *Store) issueDependencyWrite(ws int64, args []any, blocked, blocking int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github issue dependency", Plain: setIssueDependency, SQL: setIssueDependencyReporting, Args: args, Subject: idSubject("issue", blocked),
		Upserted: IssueDependencyUpserted, Deleted: IssueDependencyDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github issue dependency", readIssueDependencyView, []any{ws, blocked, blocking},
				func(row pgx.Row, l *IssueDependencyRow) error {
					err := row.Scan(&l.BlockedIssueID, &l.BlockingIssueID, &l.Deleted)
					return err
				}, s.structureViews().IssueDependency)
		},
	}
}
