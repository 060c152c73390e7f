package gitlabmirror

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// gitlabPersonData is the GitLab mirror's personal-data map, in erasure order. GitLab's own
// tombstone (the "Ghost User") has an id of its own on every instance, so a shared row's
// reference to the person is removed (NULL), which the read API shows as no author.
// Parameters: @workspaces (bigint[]), @ids the person's GitLab ids (bigint[]), @usernames and
// @emails (text[], lower case), and the text parameters of sqlkit.TextArgs.
var gitlabPersonData = []sqlkit.PersonRule{
	// The person's own rows.
	{Table: "gitlab_member", Where: `user_id = ANY(@ids) OR lower(username) = ANY(@usernames)`},
	// What they wrote alone.
	{Table: "gitlab_note", Where: `author_id = ANY(@ids)`},
	// Shared items keep their content, counts and timestamps.
	{Table: "gitlab_issue", Where: `author_id = ANY(@ids)`, Set: `author_id = NULL`},
	{Table: "gitlab_merge_request", Where: `author_id = ANY(@ids)`, Set: `author_id = NULL`},
	{Table: "gitlab_push", Where: `user_id = ANY(@ids)`, Set: `user_id = NULL`},
	// Commits keep SHA, title, message and time; GitLab names their authors by name and e-mail.
	{Table: "gitlab_commit", Where: `lower(author_email) = ANY(@emails)`, Set: `author_name = '', author_email = ''`},
	// Free text around the person (sqlkit.TextRule): their @mentions become @ghost (the
	// username of GitLab's Ghost User), trailer lines naming them go, and a project in their
	// user namespace keeps its id and name with ghost as the namespace of its path and URLs.
	sqlkit.TextRule("gitlab_project", nil, []string{"path_with_namespace", "web_url"}, GhostUsername),
	sqlkit.TextRule("gitlab_issue", []string{"title", "description"}, []string{"web_url"}, GhostUsername),
	sqlkit.TextRule("gitlab_merge_request", []string{"title", "description"}, []string{"web_url"}, GhostUsername),
	sqlkit.TextRule("gitlab_note", []string{"body"}, []string{"web_url"}, GhostUsername),
	sqlkit.TextRule("gitlab_commit", []string{"title", "message"}, []string{"url"}, GhostUsername),
	sqlkit.TextRule("gitlab_milestone", []string{"title", "description"}, nil, GhostUsername),
	// A project subscription named by a project of the person's namespace keeps its id and
	// loses the name (the backfill reads projects by id).
	{Table: "connection_subscription", Where: `provider = 'GITLAB' AND resource_type = 'project' AND ` + sqlkit.PathNamesPerson("name"), Set: `name = ''`},
}

// GhostUsername is the username of GitLab's Ghost User, the tombstone of the person's
// username in text and paths.
const GhostUsername = "ghost"

// personNames are the author names of the person's commits (GitLab names commit authors by
// name and e-mail), read before the rules clear them.
const personNames = `
SELECT coalesce(array_agg(DISTINCT author_name) FILTER (WHERE author_name <> ''), '{}')
FROM gitlab_commit WHERE workspace_id = ANY(@workspaces) AND lower(author_email) = ANY(@emails)`

// resolvePersonIDs adds the ids of the mirrored members whose username is the person's.
const resolvePersonIDs = `
SELECT coalesce(array_agg(DISTINCT id), '{}') FROM (
	SELECT unnest(@ids::bigint[]) AS id
	UNION
	SELECT user_id FROM gitlab_member WHERE workspace_id = ANY(@workspaces) AND lower(username) = ANY(@usernames)
) AS ids`

// personArgs are the parameters of the rules for scope (mirrorkit.AccountArgs, with the
// usernames as @usernames).
var personArgs = mirrorkit.AccountArgs("gitlab", "usernames", 0, "", resolvePersonIDs, personNames, nil)
