package gitlabapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// Page is where a list page of a backfill is read from; adapters/gitlab/gitlabsync keeps it in
// the job's cursor. The zero Page is the first page, asked as a keyset page
// (pagination=keyset); Offset > 0 is that offset page (page=N, GitLab's X-Next-Page); Keyset is
// the query of the previous answer's Link rel="next", checked to name the same list under the
// API root, read again under the API root by the client itself.
type Page struct {
	Offset int
	Keyset string
}

// maxKeysetQuery bounds a next link's query kept in a cursor; GitLab's are a few hundred bytes.
const maxKeysetQuery = 4 << 10

// errForeignLink is the cause of a ProviderUnreadable page whose rel="next" names another
// host, scheme or path than the list under the API root: it is never followed.
var errForeignLink = errors.New("next link is not the same list under the API root")

// ProjectListPage reads a page of a project's "issues" or "merge_requests", 100 per page, every
// state, oldest first (items created during a long sync are appended, not shifted across
// pages), for a backfill. next is the page after it, more false on the last page. The page is
// read alone into memory (at most MaxBodyBytes) and returned raw.
func (c *Client) ProjectListPage(ctx context.Context, acc gitlabmodel.Access, projectID int64, list string, at Page) (body json.RawMessage, next Page, more bool, err error) {
	q := url.Values{"per_page": {"100"}, "scope": {"all"}, "state": {"all"},
		"order_by": {"created_at"}, "sort": {"asc"}}
	if list == "merge_requests" {
		q.Del("state") // merge requests list every state without it
	}
	return c.listPage(ctx, acc, "/projects/"+strconv.FormatInt(projectID, 10)+"/"+url.PathEscape(list), q, at)
}

// GroupProjectsPage reads a page of a group's projects, its subgroups' included and projects
// only shared with it left out, 100 per page in id order (the order GitLab's keyset pages of
// projects support), for a group subscription's backfill; as ProjectListPage.
func (c *Client) GroupProjectsPage(ctx context.Context, acc gitlabmodel.Access, groupID int64, at Page) (body json.RawMessage, next Page, more bool, err error) {
	q := url.Values{"per_page": {"100"}, "include_subgroups": {"true"}, "with_shared": {"false"},
		"order_by": {"id"}, "sort": {"asc"}}
	return c.listPage(ctx, acc, "/groups/"+strconv.FormatInt(groupID, 10)+"/projects", q, at)
}

// listPage reads the page at of the list at path (escaped, under the API root) with the query q
// of its first page. The first page is asked as a keyset page; where GitLab does not offer
// keyset pages for the list it answers 405, and the first page is then read as an offset page,
// so the list goes on in offset pages. The page after a keyset request is the answer's
// rel="next" link; an answer without one but with X-Next-Page (a server that ignored
// pagination=keyset) goes on in offset pages. After an offset page, X-Next-Page names the next.
func (c *Client) listPage(ctx context.Context, acc gitlabmodel.Access, path string, q url.Values, at Page) (body json.RawMessage, next Page, more bool, err error) {
	var query string
	switch {
	case at.Offset > 0:
		q.Set("page", strconv.Itoa(at.Offset))
		query = q.Encode()
	case at.Keyset != "":
		if len(at.Keyset) > maxKeysetQuery {
			return nil, Page{}, false, errors.New("gitlab api: keyset query of a cursor is too long")
		}
		if _, err := url.ParseQuery(at.Keyset); err != nil {
			return nil, Page{}, false, errors.New("gitlab api: keyset query of a cursor does not parse")
		}
		query = at.Keyset
	default:
		first := url.Values{"pagination": {"keyset"}}
		for k, v := range q {
			first[k] = v
		}
		query = first.Encode()
	}
	h, err := c.getWithHeader(ctx, acc, path+"?"+query, &body)
	var serr *StatusError
	if at == (Page{}) && errors.As(err, &serr) && serr.Status == http.StatusMethodNotAllowed {
		// GitLab: "Keyset pagination is not yet available for this type of request".
		return c.listPage(ctx, acc, path, q, Page{Offset: 1})
	}
	if err != nil {
		return nil, Page{}, false, err
	}
	if at.Offset == 0 {
		link, ok := restkit.NextLink(h.Get("Link"))
		if ok {
			kq, err := c.sameList(link, path, query)
			if err != nil {
				return nil, Page{}, false, failure(path, inbox.ProviderUnreadable, http.StatusOK, err)
			}
			return body, Page{Keyset: kq}, true, nil
		}
	}
	current := at.Offset
	if current == 0 {
		// A keyset request answered as an offset page: its page parameter, or the first.
		current = 1
		if v, err := url.ParseQuery(query); err == nil {
			if n, err := strconv.Atoi(v.Get("page")); err == nil && n > 0 {
				current = n
			}
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("X-Next-Page"))); err == nil && n > current {
		return body, Page{Offset: n}, true, nil
	}
	return body, Page{}, false, nil
}

// sameList is the query of a rel="next" link when it names the list at path under the API
// root (same scheme and host, no credentials or fragment) and a page other than the one just
// read (query); any other link is errForeignLink.
func (c *Client) sameList(link, path, query string) (string, error) {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != c.base.Scheme || u.Host != c.base.Host || u.User != nil || u.Fragment != "" ||
		u.EscapedPath() != c.base.EscapedPath()+path || u.RawQuery == "" || u.RawQuery == query ||
		len(u.RawQuery) > maxKeysetQuery {
		return "", errForeignLink
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return "", errForeignLink
	}
	return u.RawQuery, nil
}
