package githubmirror

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// GhostID and GhostLogin are GitHub's own tombstone of a deleted account (the "ghost" user):
// erasure puts them wherever a shared row referred to the person.
const (
	GhostID    = 10137
	GhostLogin = "ghost"
	ghostID    = "10137" // GhostID in SQL text
)

// ghostIn rewrites the person's ids in an id array to the ghost, keeping the order.
func ghostIn(col string) string {
	return `ARRAY(SELECT CASE WHEN u.x = ANY(@ids) THEN ` + ghostID + ` ELSE u.x END
		FROM unnest(` + col + `) WITH ORDINALITY AS u(x, n) ORDER BY u.n)`
}

// authorIs and committerIs tell whose half of a commit is the person's: the author by login or
// e-mail; the committer by e-mail, or as the same person as a matching author (same name or
// e-mail: GitHub sends no committer login).
const (
	authorIs    = `(lower(author_login) = ANY(@logins) OR lower(author_email) = ANY(@emails))`
	committerIs = `(lower(committer_email) = ANY(@emails) OR (` + authorIs + ` AND (committer_email = author_email OR committer_name = author_name)))`
)

// githubPersonData is the GitHub mirror's personal-data map, in erasure order: the person's
// own rows, then what they wrote alone, then the shared rows that keep a tombstone.
//
// Parameters: @workspaces (bigint[]), @ids the person's GitHub ids (bigint[]), @logins their
// logins, @emails their e-mail addresses (text[], lower case), and the text parameters of
// sqlkit.TextArgs (@names: the display names their commits carry).
var githubPersonData = []sqlkit.PersonRule{
	// The person's own rows.
	{Table: "github_user", Where: `id = ANY(@ids) OR lower(login) = ANY(@logins)`},
	{Table: "github_organization_member", Where: `user_id = ANY(@ids)`},
	{Table: "github_repository_collaborator", Where: `user_id = ANY(@ids)`},
	{Table: "github_team_member", Where: `user_id = ANY(@ids)`},
	// What they wrote alone.
	{Table: "github_issue_comment", Where: `author_id = ANY(@ids)`},
	{Table: "github_review", Where: `author_id = ANY(@ids)`},
	{Table: "github_review_comment", Where: `author_id = ANY(@ids)`},
	// Shared items: every reference becomes the ghost; counts and timestamps stay.
	{Table: "github_issue", Where: `author_id = ANY(@ids) OR assignee_ids && @ids::bigint[]`,
		Set: `author_id = CASE WHEN author_id = ANY(@ids) THEN ` + ghostID + ` ELSE author_id END,
		assignee_ids = ` + ghostIn("assignee_ids")},
	{Table: "github_pull_request", Where: `author_id = ANY(@ids) OR assignee_ids && @ids::bigint[] OR requested_reviewer_ids && @ids::bigint[]`,
		Set: `author_id = CASE WHEN author_id = ANY(@ids) THEN ` + ghostID + ` ELSE author_id END,
		assignee_ids = ` + ghostIn("assignee_ids") + `,
		requested_reviewer_ids = ` + ghostIn("requested_reviewer_ids")},
	// A repository the person owns keeps its id, name and everything else; its owner becomes
	// the ghost (its full name and URLs by the text rules below).
	{Table: "github_repository", Where: `owner_id = ANY(@ids) OR lower(owner_login) = ANY(@logins)`,
		Set: `owner_id = ` + ghostID + `, owner_login = '` + GhostLogin + `'`},
	// Commits keep SHA, message and time; the person's names and e-mail addresses go.
	{Table: "github_commit", Where: authorIs + ` OR ` + committerIs,
		Set: `author_name = CASE WHEN ` + authorIs + ` THEN '' ELSE author_name END,
		author_email = CASE WHEN ` + authorIs + ` THEN '' ELSE author_email END,
		author_login = CASE WHEN ` + authorIs + ` THEN '` + GhostLogin + `' ELSE author_login END,
		committer_name = CASE WHEN ` + committerIs + ` THEN '' ELSE committer_name END,
		committer_email = CASE WHEN ` + committerIs + ` THEN '' ELSE committer_email END`},
	// Free text around the person (sqlkit.TextRule): their @mentions in other people's text
	// become @ghost, trailer lines naming them go, and a repository they own keeps its id and
	// name with the ghost as the owner segment of its full name and of every URL under it.
	sqlkit.TextRule("github_repository", []string{"description"}, []string{"full_name", "html_url"}, GhostLogin),
	sqlkit.TextRule("github_installation_repository", nil, []string{"full_name"}, GhostLogin),
	sqlkit.TextRule("github_issue", []string{"title", "body"}, []string{"html_url"}, GhostLogin),
	sqlkit.TextRule("github_pull_request", []string{"title", "body"}, []string{"html_url"}, GhostLogin),
	sqlkit.TextRule("github_issue_comment", []string{"body"}, []string{"html_url"}, GhostLogin),
	sqlkit.TextRule("github_review", []string{"body"}, nil, GhostLogin),
	sqlkit.TextRule("github_review_comment", []string{"body"}, nil, GhostLogin),
	sqlkit.TextRule("github_commit", []string{"message"}, []string{"html_url"}, GhostLogin),
	sqlkit.TextRule("github_commit_status", []string{"description"}, []string{"target_url"}, GhostLogin),
	sqlkit.TextRule("github_milestone", []string{"title", "description"}, nil, GhostLogin),
	sqlkit.TextRule("github_organization", []string{"description"}, nil, GhostLogin),
	sqlkit.TextRule("github_team", []string{"description"}, nil, GhostLogin),
	// A repository subscription named by the person's repository keeps its id and loses the
	// name (the backfill resolves a nameless subscription by id); an organization backfill's
	// cursor names its current repository by full name.
	{Table: "connection_subscription", Where: `provider = 'GITHUB' AND resource_type = 'repository' AND ` + sqlkit.PathNamesPerson("name"), Set: `name = ''`},
	{Table: "sync_job", Where: `provider = 'GITHUB' AND cursor ~* @cursor_re`, Set: `cursor = regexp_replace(cursor, @cursor_re, '\1` + GhostLogin + `', 'gi')`},
	// The installation record of an App installed on the person's own account (instance-wide:
	// installation rows belong to the App's namespace).
	{Table: "github_installation", InstanceWide: true, Where: `account_id = ANY(@ids) OR lower(account_login) = ANY(@logins)`,
		Set: `account_id = ` + ghostID + `, account_login = '` + GhostLogin + `'`},
}

// resolvePersonIDs adds to the requested numeric ids the ids of the mirrored users whose login
// is one of the person's (a login-only request still finds the rows that refer by id).
const resolvePersonIDs = `
SELECT coalesce(array_agg(DISTINCT id), '{}') FROM (
	SELECT unnest(@ids::bigint[]) AS id
	UNION
	SELECT id FROM github_user WHERE workspace_id = ANY(@workspaces) AND lower(login) = ANY(@logins)
) AS ids`

// putGhost gives each workspace whose rows now name the ghost the ghost's user row, so the
// read API shows the tombstone ("ghost") where the person was. Oldest version: a real event
// about the ghost account overwrites it.
var putGhost = `
INSERT INTO github_user (workspace_id, id, login, type, source_updated_at, source_event_id)
SELECT w, ` + ghostID + `, '` + GhostLogin + `', 'User', '-infinity', 0 FROM unnest(@workspaces::bigint[]) AS w
ON CONFLICT (workspace_id, id) DO NOTHING`

// personArgs are the parameters of the rules for scope (mirrorkit.AccountArgs: GitHub ids are
// numeric, and GitHub compares logins and e-mail addresses case-insensitively), with
// @cursor_re, the person's logins in a sync job's cursor.
var personArgs = mirrorkit.AccountArgs("github", "logins", GhostID, GhostLogin, resolvePersonIDs, personNames,
	func(args pgx.NamedArgs, logins []string) { args["cursor_re"] = sqlkit.CursorPattern(logins) })

// personNames are the author and committer names of the person's commits (authorIs, committerIs).
const personNames = `
SELECT coalesce(array_agg(DISTINCT n) FILTER (WHERE n <> ''), '{}') FROM (
	SELECT CASE WHEN ` + authorIs + ` THEN author_name END AS n FROM github_commit WHERE workspace_id = ANY(@workspaces)
	UNION ALL
	SELECT CASE WHEN ` + committerIs + ` THEN committer_name END FROM github_commit WHERE workspace_id = ANY(@workspaces)
) AS names`

// putGhostUser gives the ghost its user row in each workspace after an erasure (putGhost).
func putGhostUser(ctx context.Context, ptx pgx.Tx, args pgx.NamedArgs) error {
	_, err := ptx.Exec(ctx, putGhost, args)
	return sqlkit.Interpret("put the github ghost user", err)
}
