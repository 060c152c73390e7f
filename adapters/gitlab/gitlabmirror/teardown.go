package gitlabmirror

import (
	"context"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Teardown of an uninstalled GitLab connection (CONTRACT.md "Sync and teardown"), in the
// teardown job's transaction, after the UNINSTALLED transition committed. As for GitHub
// (githubmirror), subscriptions decide what the connection brought: a project it subscribed to,
// or whose namespace is a group it subscribed to, or that the backfill of a group it subscribed
// to found among the group's projects (a subgroup's project, recorded in gitlab_group_project),
// and that no other live GitLab connection of the workspace covers in one of these ways, is
// deleted with its issues, merge requests, notes, pipelines, pushes, commits, milestones and
// members; with no live GitLab connection left, the workspace's groups and every other GitLab
// row go too.

const tornDownProjects = `
WITH mine AS (
	SELECT p.id, p.namespace_id FROM gitlab_project p
	WHERE p.workspace_id = $1 AND EXISTS (
		SELECT 1 FROM connection_subscription s
		WHERE s.connection_id = $2 AND s.workspace_id = $1
		  AND ((s.resource_type = 'project' AND s.resource_id = p.id::text)
		       OR (s.resource_type = 'group' AND s.resource_id = p.namespace_id::text)
		       OR (s.resource_type = 'group' AND EXISTS (
		           SELECT 1 FROM gitlab_group_project g
		           WHERE g.workspace_id = $1 AND g.group_id::text = s.resource_id AND g.project_id = p.id))))
	UNION
	SELECT s.resource_id::bigint, NULL FROM connection_subscription s
	WHERE s.connection_id = $2 AND s.workspace_id = $1 AND s.resource_type = 'project'
	  AND s.resource_id ~ '^[1-9][0-9]{0,18}$'
)
SELECT COALESCE(array_agg(DISTINCT m.id), '{}') FROM mine m
WHERE NOT EXISTS (
	SELECT 1 FROM connection_subscription s JOIN connection k ON k.id = s.connection_id
	WHERE s.workspace_id = $1 AND k.workspace_id = $1 AND k.id <> $2 AND k.provider = 'GITLAB'
	  AND k.state <> 'UNINSTALLED'
	  AND ((s.resource_type = 'project' AND s.resource_id = m.id::text)
	       OR (s.resource_type = 'group' AND s.resource_id = COALESCE(m.namespace_id,
	           (SELECT p.namespace_id FROM gitlab_project p WHERE p.workspace_id = $1 AND p.id = m.id))::text)
	       OR (s.resource_type = 'group' AND EXISTS (
	           SELECT 1 FROM gitlab_group_project g
	           WHERE g.workspace_id = $1 AND g.group_id::text = s.resource_id AND g.project_id = m.id))))`

var projectTeardown = []string{
	`DELETE FROM gitlab_note WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_issue WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_merge_request WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_pipeline WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_push WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_commit WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_milestone WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_member WHERE workspace_id = $1 AND source_type = 'project' AND source_id = ANY ($2)`,
	`DELETE FROM gitlab_group_project WHERE workspace_id = $1 AND project_id = ANY ($2)`,
	`DELETE FROM gitlab_project WHERE workspace_id = $1 AND id = ANY ($2)`,
}

var workspaceTeardown = []string{
	`DELETE FROM gitlab_note WHERE workspace_id = $1`,
	`DELETE FROM gitlab_issue WHERE workspace_id = $1`,
	`DELETE FROM gitlab_merge_request WHERE workspace_id = $1`,
	`DELETE FROM gitlab_pipeline WHERE workspace_id = $1`,
	`DELETE FROM gitlab_push WHERE workspace_id = $1`,
	`DELETE FROM gitlab_commit WHERE workspace_id = $1`,
	`DELETE FROM gitlab_milestone WHERE workspace_id = $1`,
	`DELETE FROM gitlab_member WHERE workspace_id = $1`,
	`DELETE FROM gitlab_group_project WHERE workspace_id = $1`,
	`DELETE FROM gitlab_project WHERE workspace_id = $1`,
	`DELETE FROM gitlab_group WHERE workspace_id = $1`,
}

// TeardownConnection implements gitlabsync.Store.
func (s *Store) TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	others, err := mirrorkit.OtherLiveConnection(ctx, ptx, gitlab.Provider, workspaceID, connectionID)
	if err != nil {
		return err
	}
	var projects []int64
	if others {
		if err := ptx.QueryRow(ctx, tornDownProjects, workspaceID, connectionID).Scan(&projects); err != nil {
			return sqlkit.Interpret("read torn-down gitlab projects", err)
		}
	}
	// The changes of what goes: every GitLab change when everything goes, else the projects'
	// own subjects, those keyed by project, and every view naming one by projectId.
	sel := ports.ChangeSelection{TypePrefix: "gitlab.", All: !others}
	resources := make([]change.TornDownResource, len(projects))
	ids := make([]string, len(projects))
	for i, p := range projects {
		ids[i] = strconv.FormatInt(p, 10)
		resources[i] = change.TornDownResource{Type: gitlab.ResourceProject, ID: ids[i]}
		sel.Subjects = append(sel.Subjects, "gitlab:project:"+ids[i])
		sel.SubjectPrefixes = append(sel.SubjectPrefixes, "gitlab:commit:"+ids[i]+":")
	}
	if len(ids) > 0 {
		sel.DataMembers = map[string][]string{"projectId": ids}
	}
	sent, err := mirrorkit.Teardown(ctx, ptx, "tear down gitlab mirror", workspaceID, projects, projectTeardown, !others, workspaceTeardown)
	if err != nil || !sent {
		return err
	}
	return s.feed.Teardown(ctx, tx, gitlab.Provider, workspaceID, connectionID, sel, resources, !others)
}

// addGroupProject records a project found under a subscribed group (migration 00029).
const addGroupProject = `
INSERT INTO gitlab_group_project (workspace_id, group_id, project_id) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING`

// AddGroupProject implements gitlabsync.Store: the backfill of the group subscription groupID
// found the project among the group's projects, subgroups included, so teardown counts the
// project as that subscription's even when its namespace is a subgroup.
func (s *Store) AddGroupProject(ctx context.Context, tx ports.Tx, ws, groupID, projectID int64) error {
	return exec(ctx, tx, "record gitlab group project", addGroupProject, ws, groupID, projectID)
}
