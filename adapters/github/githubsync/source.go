// Package githubsync is GitHub's sync source (contract.SyncSource, run by application/backfill):
// a repository subscription's backfill reads the repository, then its labels, milestones,
// issues (GET /repos/{owner}/{repo}/issues?state=all&per_page=100, without the pull requests'
// issue sides) and pull requests, one page of 100 at a time following Link: rel="next", with
// the workspace's installation token or verified PAT (api.Credentials through the client), and
// writes each page through the mirror store's handler methods (handlers.BackfillPage); an
// uninstalled connection's teardown deletes what only it brought into the workspace.
//
// The cursor is "<list>:<page>", the next page to read.
package githubsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.SyncSource = (*Source)(nil)

// Reader is the REST client's side of a backfill (*api.Client). Errors: *inbox.ProviderError.
type Reader interface {
	Repository(ctx context.Context, acc githubmodel.Access, repo string) (json.RawMessage, error)
	RepositoryFullName(ctx context.Context, acc githubmodel.Access, id int64) (string, error)
	RepositoryListPage(ctx context.Context, acc githubmodel.Access, repo, list string, page int) (json.RawMessage, bool, error)
	OrganizationRepositoriesPage(ctx context.Context, acc githubmodel.Access, login string, page int) (json.RawMessage, bool, error)
}

// Store is the mirror store a page writes through: the handlers' methods, and the teardown.
type Store interface {
	githubhandlers.BackfillWriter
	// TeardownConnection deletes, in tx, the workspace's mirrored data that only the
	// connection brought in (githubmirror documents the rule).
	TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error
}

// Source reads GitHub for sync jobs.
type Source struct {
	reader Reader // nil: backfills fail as refused (no API access configured)
	store  Store
}

// New makes the source; reader may be nil when no GitHub API access is configured (a
// teardown needs none).
func New(reader Reader, store Store) (*Source, error) {
	if store == nil {
		return nil, errors.New("github sync: a mirror store is required")
	}
	return &Source{reader: reader, store: store}, nil
}

// Provider implements contract.SyncSource.
func (s *Source) Provider() provider.Provider { return github.Provider }

// lists are the backfill's phases, in order; the repository itself comes first.
var lists = []string{"repository", "labels", "milestones", "issues", "pulls"}

// errNoReader: GitHub API access is not configured, so nothing can be read.
var errNoReader = errors.New("github sync: no GitHub API access configured")

// NextPage implements contract.SyncSource.
func (s *Source) NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	if job.Kind == syncjob.Teardown {
		return ports.SyncPage{Done: true, Write: func(ctx context.Context, tx ports.Tx) error {
			return s.store.TeardownConnection(ctx, tx, job.WorkspaceID, job.ConnectionID)
		}}, nil
	}
	if s.reader == nil {
		return ports.SyncPage{}, &inbox.ProviderError{Provider: "github", Op: "sync", Kind: inbox.ProviderRefused, Err: errNoReader}
	}
	acc := githubmodel.Access{WorkspaceID: job.WorkspaceID}
	if job.ConnectionKind == github.KindApp.String() {
		acc.InstallationID, _ = strconv.ParseInt(job.SourceKey, 10, 64)
	}
	switch job.ResourceType {
	case github.ResourceRepository:
		repoID, err := strconv.ParseInt(job.ResourceID, 10, 64)
		if err != nil || repoID <= 0 {
			return ports.SyncPage{}, refused("sync repository", "repository id is not a positive integer")
		}
		acc.RepositoryID = repoID
		repo := job.ResourceName
		if owner, name, ok := strings.Cut(repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			if repo, err = s.reader.RepositoryFullName(ctx, acc, repoID); err != nil {
				return ports.SyncPage{}, err
			}
		}
		return s.repositoryPage(ctx, job.WorkspaceID, acc, repoID, repo, cursor)
	case github.ResourceOrganization:
		return s.organizationPage(ctx, job, acc, cursor)
	}
	return ports.SyncPage{}, refused("sync "+job.ResourceType, "not a backfilled resource type")
}

func refused(op, why string) error {
	return &inbox.ProviderError{Provider: "github", Op: op, Kind: inbox.ProviderRefused, Err: errors.New(why)}
}

// repositoryPage reads the page of one repository at its cursor: the repository, then its
// lists; Done after the last list's last page.
func (s *Source) repositoryPage(ctx context.Context, ws int64, acc githubmodel.Access, repoID int64, repo, cursor string) (ports.SyncPage, error) {
	list, page, err := parseCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	var (
		bp   githubhandlers.BackfillPage
		more bool
	)
	if list == "repository" {
		body, err := s.reader.Repository(ctx, acc, repo)
		if err != nil {
			return ports.SyncPage{}, err
		}
		if bp, err = githubhandlers.DecodeBackfillRepository(body); err != nil {
			return ports.SyncPage{}, unreadable("GET /repos/{owner}/{repo}")
		}
		if bp.Repository.ID != repoID {
			return ports.SyncPage{}, unreadable("GET /repos/{owner}/{repo}")
		}
	} else {
		body, next, err := s.reader.RepositoryListPage(ctx, acc, repo, list, page)
		if err != nil {
			return ports.SyncPage{}, err
		}
		more = next
		if bp, err = decodeList(list, body, repoID); err != nil {
			return ports.SyncPage{}, unreadable("GET /repos/{owner}/{repo}/" + list)
		}
	}
	out := ports.SyncPage{Items: bp.Items, Write: func(ctx context.Context, tx ports.Tx) error {
		return bp.Write(ctx, tx, s.store, ws)
	}}
	switch {
	case more:
		out.Next = list + ":" + strconv.Itoa(page+1)
	case list != lists[len(lists)-1]:
		out.Next = nextList(list) + ":1"
	default:
		out.Next, out.Done = list+":done", true
	}
	return out, nil
}

// organizationPage backfills an organization subscription: its repositories one after another
// (GET /orgs/{login}/repos, oldest first), each as a repository subscription's backfill. The
// cursor is "org:<repositories page>:<index on it>|<that repository's cursor>"; the
// repositories page is read again for each page of one of its repositories, so nothing but the
// cursor is kept between pages. The subscription's name is the organization's login.
func (s *Source) organizationPage(ctx context.Context, job ports.SyncJob, acc githubmodel.Access, cursor string) (ports.SyncPage, error) {
	login := job.ResourceName
	if login == "" || strings.ContainsAny(login, "/ ") {
		return ports.SyncPage{}, refused("sync organization", "an organization subscription needs its login as name")
	}
	repoPage, index, current, inner, err := parseOrgCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	// Inside a repository (inner set, the cursor naming it) the repositories page is read
	// again only when the repository's last page decides what comes next.
	if inner != "" && current.ID > 0 {
		acc.RepositoryID = current.ID
		page, err := s.repositoryPage(ctx, job.WorkspaceID, acc, current.ID, current.FullName, inner)
		if err != nil || !page.Done {
			if err == nil {
				page.Next = orgCursor(repoPage, index, current, page.Next)
			}
			return page, err
		}
		repos, more, err := s.organizationRepositories(ctx, acc, login, repoPage)
		if err != nil {
			return ports.SyncPage{}, err
		}
		return afterRepository(page, repoPage, index, len(repos), more), nil
	}
	repos, more, err := s.organizationRepositories(ctx, acc, login, repoPage)
	if err != nil {
		return ports.SyncPage{}, err
	}
	if index >= len(repos) {
		if more {
			return ports.SyncPage{Next: orgCursor(repoPage+1, 0, orgRepository{}, "")}, nil
		}
		return ports.SyncPage{Next: "org:done", Done: true}, nil
	}
	r := repos[index]
	if r.ID <= 0 || r.FullName == "" {
		return ports.SyncPage{}, unreadable("GET /orgs/{org}/repos")
	}
	acc.RepositoryID = r.ID
	page, err := s.repositoryPage(ctx, job.WorkspaceID, acc, r.ID, r.FullName, inner)
	if err != nil {
		return ports.SyncPage{}, err
	}
	if !page.Done {
		page.Next = orgCursor(repoPage, index, r, page.Next)
		return page, nil
	}
	return afterRepository(page, repoPage, index, len(repos), more), nil
}

// orgRepository is the repository an organization cursor is inside.
type orgRepository struct {
	ID       int64  `json:"id"`
	FullName string `json:"full_name"`
}

// organizationRepositories reads a page of the organization's repositories.
func (s *Source) organizationRepositories(ctx context.Context, acc githubmodel.Access, login string, page int) ([]orgRepository, bool, error) {
	body, more, err := s.reader.OrganizationRepositoriesPage(ctx, acc, login, page)
	if err != nil {
		return nil, false, err
	}
	var repos []orgRepository
	if err := json.Unmarshal(body, &repos); err != nil {
		return nil, false, unreadable("GET /orgs/{org}/repos")
	}
	return repos, more, nil
}

// afterRepository points the last page of the repository at index (of a repositories page
// of n) at what follows it: the next repository, the next repositories page, or the job's end.
func afterRepository(page ports.SyncPage, repoPage, index, n int, more bool) ports.SyncPage {
	if index+1 >= n && !more {
		page.Next = "org:done" // the last repository's last page ends the job
		return page
	}
	page.Next, page.Done = orgCursor(repoPage, index+1, orgRepository{}, ""), false
	return page
}

// orgCursor is "org:<repositories page>:<index>|<inner>", with ":<id>:<full name>" after the
// index while inside a repository (GitHub names hold no ':' or '|').
func orgCursor(page, index int, r orgRepository, inner string) string {
	head := "org:" + strconv.Itoa(page) + ":" + strconv.Itoa(index)
	if inner != "" && r.ID > 0 {
		head += ":" + strconv.FormatInt(r.ID, 10) + ":" + r.FullName
	}
	return head + "|" + inner
}

// parseOrgCursor reads orgCursor's form, and the form without the repository stored before
// it; "" is the beginning.
func parseOrgCursor(cursor string) (page, index int, r orgRepository, inner string, err error) {
	if cursor == "" {
		return 1, 0, orgRepository{}, "", nil
	}
	head, inner, ok := strings.Cut(cursor, "|")
	parts := strings.SplitN(head, ":", 5)
	if ok && (len(parts) == 3 || len(parts) == 5) && parts[0] == "org" {
		page, err1 := strconv.Atoi(parts[1])
		index, err2 := strconv.Atoi(parts[2])
		if err1 == nil && err2 == nil && page >= 1 && index >= 0 {
			if len(parts) == 3 {
				return page, index, orgRepository{}, inner, nil
			}
			id, err := strconv.ParseInt(parts[3], 10, 64)
			if err == nil && id > 0 && parts[4] != "" && !strings.ContainsAny(parts[4], ": ") {
				return page, index, orgRepository{ID: id, FullName: parts[4]}, inner, nil
			}
		}
	}
	return 0, 0, orgRepository{}, "", fmt.Errorf("github sync: cursor %q is not an organization cursor", cursor)
}

func decodeList(list string, body []byte, repoID int64) (githubhandlers.BackfillPage, error) {
	switch list {
	case "labels":
		return githubhandlers.DecodeBackfillLabels(body, repoID)
	case "milestones":
		return githubhandlers.DecodeBackfillMilestones(body, repoID)
	case "issues":
		return githubhandlers.DecodeBackfillIssues(body, repoID)
	default:
		return githubhandlers.DecodeBackfillPullRequests(body, repoID)
	}
}

// unreadable is a page that does not have GitHub's documented shape: a provider answer, so it
// is retried within the budget and never permanent (the inbox's failure table), and its
// parsing detail is not carried (the reason shown is the class).
func unreadable(op string) error {
	return &inbox.ProviderError{Provider: "github", Op: op, Kind: inbox.ProviderUnreadable, Status: 200,
		Err: errors.New("page does not have the documented shape")}
}

func nextList(list string) string {
	for i, l := range lists {
		if l == list && i+1 < len(lists) {
			return lists[i+1]
		}
	}
	return ""
}

// parseCursor reads "<list>:<page>"; "" is the beginning.
func parseCursor(cursor string) (string, int, error) {
	if cursor == "" {
		return lists[0], 1, nil
	}
	list, n, ok := strings.Cut(cursor, ":")
	page, err := strconv.Atoi(n)
	if !ok || err != nil || page < 1 || nextList(list) == "" && list != lists[len(lists)-1] {
		return "", 0, fmt.Errorf("github sync: cursor %q is not <list>:<page>", cursor)
	}
	return list, page, nil
}
