// Package gitlabsync is GitLab's sync source (contract.SyncSource, run by application/backfill):
// a project subscription's backfill reads its issues (GET /projects/{id}/issues) and merge
// requests (…/merge_requests), 100 per page, oldest first, with the job's connection's own API
// token (never an instance-wide one), and
// writes each page through the mirror store's handler methods (handlers.BackfillPage); a group
// subscription's backfill reads the group's projects, its subgroups' included
// (GET /groups/{id}/projects), and backfills each of them in turn in the same job, writing its
// project row too; an uninstalled connection's teardown deletes what only it brought into the
// workspace.
//
// Pages are keyset pages where GitLab offers them (the answer's Link rel="next", checked to
// name the same list under the API root, else the page is unreadable), offset pages
// (X-Next-Page) where it does not (gitlabapi.Page). A project's cursor is the next page to
// read: "<list>" (its first page), "<list>?<keyset query>" or "<list>:<offset page>", the form
// jobs stored before keyset pages kept. A group's cursor is
// "group:<least project id>:<projects page>|<that project's cursor>" (projectsCursor).
package gitlabsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.SyncSource = (*Source)(nil)

// Reader is the REST client's side of a backfill (*gitlabapi.Client). more is false on a
// list's last page. Errors: *inbox.ProviderError.
type Reader interface {
	ProjectListPage(ctx context.Context, acc gitlabmodel.Access, projectID int64, list string, at gitlabapi.Page) (body json.RawMessage, next gitlabapi.Page, more bool, err error)
	GroupProjectsPage(ctx context.Context, acc gitlabmodel.Access, groupID int64, at gitlabapi.Page) (body json.RawMessage, next gitlabapi.Page, more bool, err error)
}

// Store is the mirror store a page writes through, and the teardown.
type Store interface {
	gitlabhandlers.BackfillWriter
	// AddGroupProject records, in tx, that a backfill of the group subscription groupID found
	// the project among the group's projects (subgroups included), so that teardown knows the
	// subscription covers it whatever subgroup its namespace is.
	AddGroupProject(ctx context.Context, tx ports.Tx, ws, groupID, projectID int64) error
	// TeardownConnection deletes, in tx, the workspace's mirrored GitLab data that only the
	// connection brought in (gitlabmirror documents the rule).
	TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error
}

// Source reads GitLab for sync jobs.
type Source struct {
	reader Reader // nil: no GitLab API root configured; backfills fail as refused
	store  Store
}

// New makes the source; reader may be nil when no GitLab API root is configured. The reader
// reads with the job's connection's own API token (gitlabmodel.Access.ConnectionID).
func New(reader Reader, store Store) (*Source, error) {
	if store == nil {
		return nil, errors.New("gitlab sync: a mirror store is required")
	}
	return &Source{reader: reader, store: store}, nil
}

// Provider implements contract.SyncSource.
func (s *Source) Provider() provider.Provider { return gitlab.Provider }

var lists = []string{"issues", "merge_requests"}

func refused(op, why string) error {
	return &inbox.ProviderError{Provider: "gitlab", Op: op, Kind: inbox.ProviderRefused, Err: errors.New(why)}
}

// unreadable is a page that does not have GitLab's documented shape: retried within the budget,
// never permanent, and without its parsing detail.
func unreadable(op string) error {
	return &inbox.ProviderError{Provider: "gitlab", Op: op, Kind: inbox.ProviderUnreadable, Status: 200,
		Err: errors.New("page does not have the documented shape")}
}

// NextPage implements contract.SyncSource.
func (s *Source) NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	if job.Kind == syncjob.Teardown {
		return ports.SyncPage{Done: true, Write: func(ctx context.Context, tx ports.Tx) error {
			return s.store.TeardownConnection(ctx, tx, job.WorkspaceID, job.ConnectionID)
		}}, nil
	}
	if job.ResourceType != gitlab.ResourceProject && job.ResourceType != gitlab.ResourceGroup {
		return ports.SyncPage{}, refused("sync "+job.ResourceType, "only projects and groups are backfilled")
	}
	if s.reader == nil {
		return ports.SyncPage{}, refused("sync", "no GitLab API root configured")
	}
	id, err := strconv.ParseInt(job.ResourceID, 10, 64)
	if err != nil || id <= 0 {
		return ports.SyncPage{}, refused("sync "+job.ResourceType, job.ResourceType+" id is not a positive integer")
	}
	// Every read of the job carries its own connection's API token, never another's.
	acc := gitlabmodel.Access{WorkspaceID: job.WorkspaceID, ConnectionID: job.ConnectionID}
	if job.ResourceType == gitlab.ResourceGroup {
		return s.groupPage(ctx, acc, id, cursor)
	}
	return s.projectPage(ctx, acc, id, cursor)
}

// projectPage reads the page of one project at its cursor: its issues, then its merge
// requests; Done after the last page of the merge requests.
func (s *Source) projectPage(ctx context.Context, acc gitlabmodel.Access, projectID int64, cursor string) (ports.SyncPage, error) {
	ws := acc.WorkspaceID
	list, at, err := parseCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	body, next, more, err := s.reader.ProjectListPage(ctx, acc, projectID, list, at)
	if err != nil {
		return ports.SyncPage{}, err
	}
	var bp gitlabhandlers.BackfillPage
	if list == "issues" {
		bp, err = gitlabhandlers.DecodeBackfillIssues(body, projectID)
	} else {
		bp, err = gitlabhandlers.DecodeBackfillMergeRequests(body, projectID)
	}
	if err != nil {
		return ports.SyncPage{}, unreadable("GET /projects/{id}/" + list)
	}
	out := ports.SyncPage{Items: bp.Items(), Write: func(ctx context.Context, tx ports.Tx) error {
		return bp.Write(ctx, tx, s.store, ws)
	}}
	switch {
	case more:
		out.Next = listCursor(list, next)
	case list == lists[0]:
		out.Next = lists[1]
	default:
		out.Next, out.Done = list+":done", true
	}
	return out, nil
}

// groupPage backfills a group subscription: the group's projects one after another, least id
// first on each projects page (whatever order the server answers in), each as a project
// subscription's backfill, its first page also writing the project row and its membership of
// the group (Store.AddGroupProject). Nothing but the cursor is kept between pages: the projects
// page is read for a project's first page and again after its last, to find what follows (a
// project's later pages name it by the cursor's id alone, so they cost no extra call); a
// project that left the group meanwhile is passed over, one that came in with a greater id is
// backfilled on its page.
func (s *Source) groupPage(ctx context.Context, acc gitlabmodel.Access, groupID int64, cursor string) (ports.SyncPage, error) {
	ws := acc.WorkspaceID
	after, at, inner, err := parseGroupCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	// Inside a project (inner set) its id is the cursor's: the group's projects page is read
	// again only when the project's last page decides what comes next.
	if inner != "" && after > 0 {
		page, err := s.projectPage(ctx, acc, after, inner)
		if err != nil || !page.Done {
			if err == nil {
				page.Next = groupCursor(after, at, page.Next)
			}
			return page, err
		}
		return s.afterProject(ctx, acc, groupID, after, at, page)
	}
	projects, next, more, err := s.groupProjects(ctx, acc, groupID, at)
	if err != nil {
		return ports.SyncPage{}, err
	}
	p, found := least(projects, after)
	if !found {
		if more {
			return ports.SyncPage{Next: groupCursor(0, next, "")}, nil
		}
		return ports.SyncPage{Next: "group:done", Done: true}, nil
	}
	page, err := s.projectPage(ctx, acc, p.ID, inner)
	if err != nil {
		return ports.SyncPage{}, err
	}
	if inner == "" {
		write := page.Write
		page.Items++
		page.Write = func(ctx context.Context, tx ports.Tx) error {
			if err := s.store.UpsertProject(ctx, tx, ws, p); err != nil {
				return err
			}
			if err := s.store.AddGroupProject(ctx, tx, ws, groupID, p.ID); err != nil {
				return err
			}
			return write(ctx, tx)
		}
	}
	if !page.Done {
		page.Next = groupCursor(p.ID, at, page.Next)
		return page, nil
	}
	return nextProject(page, projects, p.ID, at, next, more), nil
}

// afterProject is the last page of project id, which was read without the group's projects
// page: that page is read now to decide what comes next.
func (s *Source) afterProject(ctx context.Context, acc gitlabmodel.Access, groupID, id int64, at gitlabapi.Page, page ports.SyncPage) (ports.SyncPage, error) {
	projects, next, more, err := s.groupProjects(ctx, acc, groupID, at)
	if err != nil {
		return ports.SyncPage{}, err
	}
	return nextProject(page, projects, id, at, next, more), nil
}

// groupProjects reads a page of the group's projects.
func (s *Source) groupProjects(ctx context.Context, acc gitlabmodel.Access, groupID int64, at gitlabapi.Page) ([]gitlabmodel.Project, gitlabapi.Page, bool, error) {
	body, next, more, err := s.reader.GroupProjectsPage(ctx, acc, groupID, at)
	if err != nil {
		return nil, gitlabapi.Page{}, false, err
	}
	projects, err := gitlabhandlers.DecodeBackfillProjects(body)
	if err != nil {
		return nil, gitlabapi.Page{}, false, unreadable("GET /groups/{id}/projects")
	}
	return projects, next, more, nil
}

// nextProject points the last page of project id at what follows it: the next project of the
// same projects page, the next projects page, or the job's end.
func nextProject(page ports.SyncPage, projects []gitlabmodel.Project, id int64, at, next gitlabapi.Page, more bool) ports.SyncPage {
	page.Done = false
	switch _, later := least(projects, id+1); {
	case later:
		page.Next = groupCursor(id+1, at, "")
	case more:
		page.Next = groupCursor(0, next, "")
	default:
		page.Next, page.Done = "group:done", true // the last project's last page ends the job
	}
	return page
}

// least is the project of the least id not below after.
func least(projects []gitlabmodel.Project, after int64) (gitlabmodel.Project, bool) {
	var (
		best  gitlabmodel.Project
		found bool
	)
	for _, p := range projects {
		if p.ID >= after && (!found || p.ID < best.ID) {
			best, found = p, true
		}
	}
	return best, found
}

// pageToken writes a page for a cursor: "" the first, "<n>" an offset page, "?<query>" a
// keyset page.
func pageToken(p gitlabapi.Page) string {
	switch {
	case p.Offset > 0:
		return strconv.Itoa(p.Offset)
	case p.Keyset != "":
		return "?" + p.Keyset
	}
	return ""
}

// parsePageToken reads pageToken's form.
func parsePageToken(s string) (gitlabapi.Page, bool) {
	if s == "" {
		return gitlabapi.Page{}, true
	}
	if q, ok := strings.CutPrefix(s, "?"); ok {
		return gitlabapi.Page{Keyset: q}, q != ""
	}
	n, err := strconv.Atoi(s)
	return gitlabapi.Page{Offset: n}, err == nil && n >= 1
}

// listCursor is a project's cursor at page at of list.
func listCursor(list string, at gitlabapi.Page) string {
	if at.Offset > 0 {
		return list + ":" + strconv.Itoa(at.Offset)
	}
	return list + pageToken(at)
}

// parseCursor reads a project's cursor; "" is the beginning.
func parseCursor(cursor string) (string, gitlabapi.Page, error) {
	if cursor == "" {
		return lists[0], gitlabapi.Page{}, nil
	}
	for _, list := range lists {
		rest, ok := strings.CutPrefix(cursor, list)
		if !ok {
			continue
		}
		if rest == "" {
			return list, gitlabapi.Page{}, nil
		}
		if n, ok := strings.CutPrefix(rest, ":"); ok {
			rest = n
		} else if !strings.HasPrefix(rest, "?") {
			break
		}
		if at, ok := parsePageToken(rest); ok && rest != "" {
			return list, at, nil
		}
		break
	}
	return "", gitlabapi.Page{}, fmt.Errorf("gitlab sync: cursor %q is not <list>, <list>:<page> or <list>?<query>", cursor)
}

// groupCursor is a group's cursor: the least id of the project to backfill on the projects page
// at, and that project's cursor. The page is query-escaped, so it holds no ':' or '|'.
func groupCursor(after int64, at gitlabapi.Page, inner string) string {
	return "group:" + strconv.FormatInt(after, 10) + ":" + url.QueryEscape(pageToken(at)) + "|" + inner
}

// parseGroupCursor reads groupCursor's form; "" is the beginning.
func parseGroupCursor(cursor string) (after int64, at gitlabapi.Page, inner string, err error) {
	if cursor == "" {
		return 0, gitlabapi.Page{}, "", nil
	}
	bad := fmt.Errorf("gitlab sync: cursor %q is not a group cursor", cursor)
	head, inner, ok := strings.Cut(cursor, "|")
	rest, isGroup := strings.CutPrefix(head, "group:")
	id, token, hasToken := strings.Cut(rest, ":")
	if !ok || !isGroup || !hasToken {
		return 0, gitlabapi.Page{}, "", bad
	}
	after, err1 := strconv.ParseInt(id, 10, 64)
	token, err2 := url.QueryUnescape(token)
	at, tokenOK := parsePageToken(token)
	if err1 != nil || err2 != nil || after < 0 || !tokenOK {
		return 0, gitlabapi.Page{}, "", bad
	}
	return after, at, inner, nil
}
