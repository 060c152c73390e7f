package gitlabapi

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// ProjectListPage reads page (from 1) of a project's "issues" or "merge_requests", 100 per
// page, every state, oldest first (items created during a long sync are appended, not shifted
// across pages), for a backfill (adapters/gitlab/gitlabsync). next is GitLab's X-Next-Page (0:
// the last page). The page is read alone into memory (at most MaxBodyBytes) and returned raw.
func (c *Client) ProjectListPage(ctx context.Context, projectID int64, list string, page int) (body json.RawMessage, next int, err error) {
	q := url.Values{"per_page": {"100"}, "page": {strconv.Itoa(page)}, "scope": {"all"}, "state": {"all"},
		"order_by": {"created_at"}, "sort": {"asc"}}
	if list == "merge_requests" {
		q.Del("state") // merge requests list every state without it
	}
	path := "/projects/" + strconv.FormatInt(projectID, 10) + "/" + url.PathEscape(list) + "?" + q.Encode()
	h, err := c.getWithHeader(ctx, path, &body)
	if err != nil {
		return nil, 0, err
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("X-Next-Page"))); err == nil && n > page {
		next = n
	}
	return body, next, nil
}
