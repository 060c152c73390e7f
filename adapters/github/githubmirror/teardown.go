package githubmirror

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Teardown of an uninstalled connection (CONTRACT.md "Sync and teardown"): the mirrored data
// that only that connection brought into the workspace is deleted, in the teardown job's
// transaction, after the UNINSTALLED transition committed. The mirror rows carry no
// connection, so "only that connection" is decided by subscriptions, which an uninstall keeps:
//   - a repository is the connection's when it subscribes to the repository or to its owner,
//     and is kept when another live (not UNINSTALLED) GitHub connection of the workspace does;
//   - everything of a torn-down repository goes (issues, pull requests, their comments,
//     reviews, links and checks, labels, milestones, commits, refs, statuses, check runs,
//     collaborators, team and installation links, the repository row);
//   - with no live GitHub connection left in the workspace, what is not tied to one repository
//     goes too (users, organizations, their members, teams).
//
// The deletions are hard deletes, not tombstones: a reconnect backfills again, and a late
// webhook of a torn-down repository is not admitted (its connection is not ACTIVE).

// tornDownRepositories are the repository ids of the workspace ($1) that the connection ($2)
// brought in and no other live GitHub connection of the workspace covers.
const tornDownRepositories = `
WITH mine AS (
	SELECT r.id, r.owner_id FROM github_repository r
	WHERE r.workspace_id = $1 AND EXISTS (
		SELECT 1 FROM connection_subscription s
		WHERE s.connection_id = $2 AND s.workspace_id = $1
		  AND ((s.resource_type = 'repository' AND s.resource_id = r.id::text)
		       OR (s.resource_type = 'organization' AND s.resource_id = r.owner_id::text)))
	UNION
	SELECT s.resource_id::bigint, NULL FROM connection_subscription s
	WHERE s.connection_id = $2 AND s.workspace_id = $1 AND s.resource_type = 'repository'
	  AND s.resource_id ~ '^[1-9][0-9]{0,18}$'
)
SELECT COALESCE(array_agg(DISTINCT m.id), '{}') FROM mine m
WHERE NOT EXISTS (
	SELECT 1 FROM connection_subscription s JOIN connection k ON k.id = s.connection_id
	WHERE s.workspace_id = $1 AND k.workspace_id = $1 AND k.id <> $2 AND k.provider = 'GITHUB'
	  AND k.state <> 'UNINSTALLED'
	  AND ((s.resource_type = 'repository' AND s.resource_id = m.id::text)
	       OR (s.resource_type = 'organization' AND s.resource_id = COALESCE(m.owner_id,
	           (SELECT r.owner_id FROM github_repository r WHERE r.workspace_id = $1 AND r.id = m.id))::text)))`

// repositoryTeardown deletes a set of repositories ($2) of the workspace ($1), children first.
var repositoryTeardown = []string{
	`DELETE FROM github_sub_issue WHERE workspace_id = $1 AND (parent_issue_id IN (SELECT id FROM github_issue WHERE workspace_id = $1 AND repository_id = ANY ($2))
		OR sub_issue_id IN (SELECT id FROM github_issue WHERE workspace_id = $1 AND repository_id = ANY ($2)))`,
	`DELETE FROM github_issue_dependency WHERE workspace_id = $1 AND (blocked_issue_id IN (SELECT id FROM github_issue WHERE workspace_id = $1 AND repository_id = ANY ($2))
		OR blocking_issue_id IN (SELECT id FROM github_issue WHERE workspace_id = $1 AND repository_id = ANY ($2)))`,
	`DELETE FROM github_pull_request_checks WHERE workspace_id = $1 AND pull_request_id IN (SELECT id FROM github_pull_request WHERE workspace_id = $1 AND repository_id = ANY ($2))`,
	`DELETE FROM github_issue_comment WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_review_comment WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_review_thread WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_review WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_issue WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_pull_request WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_milestone WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_label WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_check_run WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_check_suite WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_commit_status WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_commit WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_ref WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_repository_collaborator WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_team_repository WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_installation_repository WHERE workspace_id = $1 AND repository_id = ANY ($2)`,
	`DELETE FROM github_repository WHERE workspace_id = $1 AND id = ANY ($2)`,
}

// workspaceTeardown deletes what is not tied to one repository, when no live GitHub connection
// is left in the workspace ($1).
var workspaceTeardown = []string{
	`DELETE FROM github_team_member WHERE workspace_id = $1`,
	`DELETE FROM github_team WHERE workspace_id = $1`,
	`DELETE FROM github_organization_member WHERE workspace_id = $1`,
	`DELETE FROM github_organization WHERE workspace_id = $1`,
	`DELETE FROM github_user WHERE workspace_id = $1`,
}

// TeardownConnection implements githubsync.Store: it deletes, in tx, what only the connection
// brought into the workspace (the rule above).
func (s *Store) TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	var repos []int64
	if err := ptx.QueryRow(ctx, tornDownRepositories, workspaceID, connectionID).Scan(&repos); err != nil {
		return sqlkit.Interpret("read torn-down github repositories", err)
	}
	others, err := mirrorkit.OtherLiveConnection(ctx, ptx, github.Provider, workspaceID, connectionID)
	if err != nil {
		return err
	}
	// The changes of what goes are selected before it goes (an issue's subject names the
	// issue, whose repository only its row knows).
	sel, err := tornDownChanges(ctx, ptx, workspaceID, repos, !others)
	if err != nil {
		return err
	}
	sent, err := mirrorkit.Teardown(ctx, ptx, "tear down github mirror", workspaceID, repos, repositoryTeardown, !others, workspaceTeardown)
	if err != nil || !sent {
		return err
	}
	resources := make([]change.TornDownResource, len(repos))
	for i, r := range repos {
		resources[i] = change.TornDownResource{Type: github.ResourceRepository, ID: strconv.FormatInt(r, 10)}
	}
	return s.feed.Teardown(ctx, tx, github.Provider, workspaceID, connectionID, sel, resources, !others)
}

// tornDownIssues are the subjects of the issues and pull requests of the repositories $2.
const tornDownIssues = `
SELECT coalesce(array_agg(s), '{}') FROM (
	SELECT 'github:issue:' || id AS s FROM github_issue WHERE workspace_id = $1 AND repository_id = ANY ($2)
	UNION ALL
	SELECT 'github:pull_request:' || id FROM github_pull_request WHERE workspace_id = $1 AND repository_id = ANY ($2)
) AS subjects`

// tornDownChanges selects the feed's changes of the torn-down repositories (their own
// subjects, the subjects keyed by repository, the issues and pull requests in them, and every
// view naming one by repositoryId), or every GitHub change when everything goes.
func tornDownChanges(ctx context.Context, ptx pgx.Tx, ws int64, repos []int64, everything bool) (ports.ChangeSelection, error) {
	sel := ports.ChangeSelection{TypePrefix: "github.", All: everything}
	if everything || len(repos) == 0 {
		return sel, nil
	}
	if err := ptx.QueryRow(ctx, tornDownIssues, ws, repos).Scan(&sel.Subjects); err != nil {
		return sel, sqlkit.Interpret("read torn-down github subjects", err)
	}
	ids := make([]string, len(repos))
	for i, r := range repos {
		id := strconv.FormatInt(r, 10)
		ids[i] = id
		sel.Subjects = append(sel.Subjects, "github:repository:"+id)
		sel.SubjectPrefixes = append(sel.SubjectPrefixes, "github:commit:"+id+":", "github:ref:"+id+":")
	}
	sel.DataMembers = map[string][]string{"repositoryId": ids}
	return sel, nil
}
