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
	"errors"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
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

// Config is what the routes need.
type Config struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Reader  Reader
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Auth == nil || cfg.Members == nil || cfg.Reader == nil {
		return errors.New("mirror api: an authenticator, a member directory and a reader are required")
	}
	h := handlers{reader: cfg.Reader, log: cfg.Log}
	ws := managementapi.MemberRoutes(r, cfg.Auth, cfg.Members, "")
	ws.GET("/repositories", h.repositories)
	ws.GET("/repositories/:id/issues", h.issues)
	ws.GET("/repositories/:id/pulls", h.pulls)
	ws.GET("/repositories/:id/commits", h.commits)
	return nil
}

type handlers struct {
	reader Reader
	log    ports.Logger
}

func (h handlers) fail(c *gin.Context, err error) {
	httperr.WriteLogged(c, err, h.log, "mirror read failed")
}

// repositoryID reads :id; anything but a positive id names no repository (404).
func repositoryID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, ports.ErrNotFound
	}
	return id, nil
}

// list answers one page of a list read of the workspace managementapi.RequireMember authorised.
func list[R, J any](h handlers, c *gin.Context, read func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error), toJSON func(R) J) {
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, read, toJSON); err != nil {
		h.fail(c, err)
	}
}

// ofRepository binds a repository list read to :id.
func ofRepository[R any](h handlers, c *gin.Context, read func(ctx context.Context, ws, repo int64, page ports.PageRequest) ([]R, int, error)) (func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error), bool) {
	id, err := repositoryID(c)
	if err != nil {
		h.fail(c, err)
		return nil, false
	}
	return func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error) {
		return read(ctx, ws, id, page)
	}, true
}

func (h handlers) repositories(c *gin.Context) {
	list(h, c, h.reader.Repositories, toRepositoryJSON)
}

func (h handlers) issues(c *gin.Context) {
	if read, ok := ofRepository(h, c, h.reader.Issues); ok {
		list(h, c, read, toIssueJSON)
	}
}

func (h handlers) pulls(c *gin.Context) {
	if read, ok := ofRepository(h, c, h.reader.PullRequests); ok {
		list(h, c, read, toPullJSON)
	}
}

func (h handlers) commits(c *gin.Context) {
	if read, ok := ofRepository(h, c, h.reader.Commits); ok {
		list(h, c, read, toCommitJSON)
	}
}

// timestamp is RFC 3339 in UTC, or null.
func timestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
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
		Description: r.Description, HTMLURL: r.HTMLURL, PushedAt: timestamp(r.PushedAt), UpdatedAt: timestamp(r.UpdatedAt),
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
		CreatedAt: timestamp(i.CreatedAt), UpdatedAt: timestamp(i.UpdatedAt), ClosedAt: timestamp(i.ClosedAt),
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
		Checks: p.ChecksState, CreatedAt: timestamp(p.CreatedAt), UpdatedAt: timestamp(p.UpdatedAt),
		ClosedAt: timestamp(p.ClosedAt), MergedAt: timestamp(p.MergedAt),
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
		CommittedAt: timestamp(c.CommittedAt), HTMLURL: c.HTMLURL,
	}
}
