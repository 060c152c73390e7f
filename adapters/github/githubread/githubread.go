// Package githubread serves the read API of the GitHub mirror:
//
//	GET /api/workspaces/{ws}/repositories
//	GET /api/workspaces/{ws}/repositories/{id}/issues
//	GET /api/workspaces/{ws}/repositories/{id}/pulls
//	GET /api/workspaces/{ws}/repositories/{id}/commits
//
// Lists are paged like every list of the contract ({"items","page","size","total"}, ?page=0&size=50,
// size at most 200) and bound to the workspace: a repository the workspace does not mirror, also
// one of another workspace, is 404.
//
// Access (managementapi.RequireMember, shared with the GitLab, Slack and Outline read APIs):
// reading the mirror is not managing the workspace, so every member of the workspace may read
// it, whatever its role (ADMIN or MEMBER), and the instance administrator may read every
// workspace. 401 without a valid token (managementapi.RequireAuth), 404 for an unknown
// workspace, 403 for a known workspace the caller is no member of, as the management API answers.
package githubread

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Reader reads the mirror; *githubmirror.Store is one. Every method binds the workspace.
type Reader interface {
	Repositories(ctx context.Context, workspaceID int64, page ports.PageRequest) ([]githubmirror.RepositoryRow, int, error)
	// Issues, PullRequests and Commits errors: ports.ErrNotFound when the workspace does not
	// mirror the repository.
	Issues(ctx context.Context, workspaceID, repositoryID int64, page ports.PageRequest) ([]githubmirror.IssueRow, int, error)
	PullRequests(ctx context.Context, workspaceID, repositoryID int64, page ports.PageRequest) ([]githubmirror.PullRequestRow, int, error)
	Commits(ctx context.Context, workspaceID, repositoryID int64, page ports.PageRequest) ([]githubmirror.CommitRow, int, error)
}

// Config is what the routes need: readkit.Config, its store named Reader.
type Config struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Reader  Reader
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	kit := readkit.Config[Reader]{Auth: cfg.Auth, Members: cfg.Members, Store: cfg.Reader, Log: cfg.Log}
	return readkit.Mount(r, "githubread", "", kit, func(g *readkit.Group) {
		readkit.List(g, "/repositories", cfg.Reader.Repositories, toRepositoryJSON)
		// The lists of repository :id; anything but a positive id names no repository (404).
		readkit.ListOfID(g, "/repositories/:id/issues", cfg.Reader.Issues, toIssueJSON)
		readkit.ListOfID(g, "/repositories/:id/pulls", cfg.Reader.PullRequests, toPullJSON)
		readkit.ListOfID(g, "/repositories/:id/commits", cfg.Reader.Commits, toCommitJSON)
	})
}

type repositoryJSON struct {
	ID            int64   `json:"id"`
	Owner         string  `json:"owner" person:"login"`
	Name          string  `json:"name"`
	FullName      string  `json:"fullName"`
	Private       bool    `json:"private"`
	Visibility    string  `json:"visibility"`
	DefaultBranch string  `json:"defaultBranch"`
	Archived      bool    `json:"archived"`
	Fork          bool    `json:"fork"`
	Description   *string `json:"description"`
	HTMLURL       string  `json:"htmlUrl"`
	PushedAt      *string `json:"pushedAt"`
	UpdatedAt     *string `json:"updatedAt"`
}

func toRepositoryJSON(r githubmirror.RepositoryRow) repositoryJSON {
	return repositoryJSON{
		ID: r.ID, Owner: r.OwnerLogin, Name: r.Name, FullName: r.FullName, Private: r.Private,
		Visibility: r.Visibility, DefaultBranch: r.DefaultBranch, Archived: r.Archived, Fork: r.Fork,
		Description: r.Description, HTMLURL: r.HTMLURL, PushedAt: readkit.Timestamp(r.PushedAt), UpdatedAt: readkit.Timestamp(r.UpdatedAt),
	}
}

type issueJSON struct {
	ID          int64    `json:"id"`
	Number      int      `json:"number"`
	Title       string   `json:"title"`
	State       string   `json:"state"`
	StateReason *string  `json:"stateReason"`
	Locked      bool     `json:"locked"`
	Author      *string  `json:"author" person:"login"`
	Labels      []string `json:"labels"`
	Comments    int      `json:"comments"`
	HTMLURL     string   `json:"htmlUrl"`
	CreatedAt   *string  `json:"createdAt"`
	UpdatedAt   *string  `json:"updatedAt"`
	ClosedAt    *string  `json:"closedAt"`
}

func toIssueJSON(i githubmirror.IssueRow) issueJSON {
	return issueJSON{
		ID: i.ID, Number: i.Number, Title: i.Title, State: i.State, StateReason: i.StateReason, Locked: i.Locked,
		Author: i.AuthorLogin, Labels: i.Labels, Comments: i.CommentCount, HTMLURL: i.HTMLURL,
		CreatedAt: readkit.Timestamp(i.CreatedAt), UpdatedAt: readkit.Timestamp(i.UpdatedAt), ClosedAt: readkit.Timestamp(i.ClosedAt),
	}
}

type pullJSON struct {
	ID        int64   `json:"id"`
	Number    int     `json:"number"`
	Title     string  `json:"title"`
	State     string  `json:"state"`
	Draft     bool    `json:"draft"`
	Merged    bool    `json:"merged"`
	Author    *string `json:"author" person:"login"`
	HeadRef   string  `json:"headRef"`
	HeadSHA   string  `json:"headSha"`
	BaseRef   string  `json:"baseRef"`
	HTMLURL   string  `json:"htmlUrl"`
	Checks    *string `json:"checks"`
	CreatedAt *string `json:"createdAt"`
	UpdatedAt *string `json:"updatedAt"`
	ClosedAt  *string `json:"closedAt"`
	MergedAt  *string `json:"mergedAt"`
}

func toPullJSON(p githubmirror.PullRequestRow) pullJSON {
	return pullJSON{
		ID: p.ID, Number: p.Number, Title: p.Title, State: p.State, Draft: p.Draft, Merged: p.Merged,
		Author: p.AuthorLogin, HeadRef: p.HeadRef, HeadSHA: p.HeadSHA, BaseRef: p.BaseRef, HTMLURL: p.HTMLURL,
		Checks: p.ChecksState, CreatedAt: readkit.Timestamp(p.CreatedAt), UpdatedAt: readkit.Timestamp(p.UpdatedAt),
		ClosedAt: readkit.Timestamp(p.ClosedAt), MergedAt: readkit.Timestamp(p.MergedAt),
	}
}

type commitJSON struct {
	SHA         string  `json:"sha"`
	Message     string  `json:"message"`
	AuthorName  string  `json:"authorName" person:"name"`
	AuthorLogin *string `json:"authorLogin" person:"login"`
	CommittedAt *string `json:"committedAt"`
	HTMLURL     string  `json:"htmlUrl"`
}

func toCommitJSON(c githubmirror.CommitRow) commitJSON {
	return commitJSON{
		SHA: c.SHA, Message: c.Message, AuthorName: c.AuthorName, AuthorLogin: c.AuthorLogin,
		CommittedAt: readkit.Timestamp(c.CommittedAt), HTMLURL: c.HTMLURL,
	}
}
