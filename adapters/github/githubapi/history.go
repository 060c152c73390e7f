package githubapi

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
)

// The reads of a backfill (adapters/github/githubsync): a repository and one page of one of its
// lists. Each page is read into memory alone (at most MaxBodyBytes) and returned raw, for the
// caller to map and write before it reads the next: a repository of any size is synced in
// bounded memory. Pages are requested by number; a page's Link header says whether a next one
// exists, and its URL is never followed, so the token never leaves BaseURL's host.

// Repository reads GET /repos/{owner}/{name} (repo "owner/name") as GitHub answered it.
func (c *Client) Repository(ctx context.Context, acc githubmodel.Access, repo string) (json.RawMessage, error) {
	rp, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	var body json.RawMessage
	_, err = c.get(ctx, acc, rp, url.Values{}, &body)
	return body, err
}

// RepositoryFullName reads "owner/name" of the repository id (GET /repositories/{id}).
func (c *Client) RepositoryFullName(ctx context.Context, acc githubmodel.Access, id int64) (string, error) {
	path := "/repositories/" + strconv.FormatInt(id, 10)
	var r struct {
		ID       int64  `json:"id"`
		FullName string `json:"full_name"`
	}
	if _, err := c.get(ctx, acc, path, url.Values{}, &r); err != nil {
		return "", err
	}
	if r.ID != id || r.FullName == "" {
		return "", unreadable(path, "repository without its id or full name")
	}
	return r.FullName, nil
}

// RepositoryListPage reads page (from 1) of the repository's list ("issues", "pulls",
// "labels", "milestones"), 100 per page, every state, oldest first where GitHub sorts by
// creation (so items created during a long sync are appended, not shifted across pages). more
// reports a rel="next" link.
func (c *Client) RepositoryListPage(ctx context.Context, acc githubmodel.Access, repo, list string, page int) (body json.RawMessage, more bool, err error) {
	rp, err := repoPath(repo)
	if err != nil {
		return nil, false, err
	}
	q := pageQuery(page)
	switch list {
	case "issues", "pulls":
		q.Set("state", "all")
		q.Set("sort", "created")
		q.Set("direction", "asc")
	case "milestones":
		q.Set("state", "all")
	}
	more, err = c.get(ctx, acc, rp+"/"+url.PathEscape(list), q, &body)
	return body, more, err
}

// OrganizationRepositoriesPage reads page (from 1) of an organization's repositories
// (GET /orgs/{org}/repos?type=all, 100 per page, oldest first, so repositories created during a
// long sync are appended). more reports a rel="next" link.
func (c *Client) OrganizationRepositoriesPage(ctx context.Context, acc githubmodel.Access, login string, page int) (body json.RawMessage, more bool, err error) {
	q := pageQuery(page)
	q.Set("type", "all")
	q.Set("sort", "created")
	q.Set("direction", "asc")
	more, err = c.get(ctx, acc, "/orgs/"+url.PathEscape(login)+"/repos", q, &body)
	return body, more, err
}
