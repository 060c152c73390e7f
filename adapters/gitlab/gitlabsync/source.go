// Package gitlabsync is GitLab's sync source (ports.SyncSource, run by application/backfill):
// a project subscription's backfill reads its issues (GET /projects/{id}/issues) and merge
// requests (…/merge_requests), 100 per page, oldest first, following X-Next-Page, with the
// configured API token, and writes each page through the mirror store's handler methods
// (handlers.BackfillPage); an uninstalled connection's teardown deletes what only it brought
// into the workspace. The cursor is "<list>:<page>", the next page to read.
package gitlabsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.SyncSource = (*Source)(nil)

// Reader is the REST client's side of a backfill (*api.Client). Errors: *inbox.ProviderError.
type Reader interface {
	ProjectListPage(ctx context.Context, projectID int64, list string, page int) (json.RawMessage, int, error)
}

// Store is the mirror store a page writes through, and the teardown.
type Store interface {
	gitlabhandlers.BackfillWriter
	// TeardownConnection deletes, in tx, the workspace's mirrored GitLab data that only the
	// connection brought in (gitlabmirror documents the rule).
	TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error
}

// Source reads GitLab for sync jobs.
type Source struct {
	reader Reader // nil: no API token configured; backfills fail as refused
	store  Store
}

// New makes the source; reader may be nil when no GitLab API access is configured.
func New(reader Reader, store Store) (*Source, error) {
	if store == nil {
		return nil, errors.New("gitlab sync: a mirror store is required")
	}
	return &Source{reader: reader, store: store}, nil
}

// Provider implements ports.SyncSource.
func (s *Source) Provider() provider.Provider { return gitlab.Provider }

var lists = []string{"issues", "merge_requests"}

func refused(op, why string) error {
	return &inbox.ProviderError{Provider: "gitlab", Op: op, Kind: inbox.ProviderRefused, Err: errors.New(why)}
}

// NextPage implements ports.SyncSource.
func (s *Source) NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	if job.Kind == syncjob.Teardown {
		return ports.SyncPage{Done: true, Write: func(ctx context.Context, tx ports.Tx) error {
			return s.store.TeardownConnection(ctx, tx, job.WorkspaceID, job.ConnectionID)
		}}, nil
	}
	if job.ResourceType != gitlab.ResourceProject {
		return ports.SyncPage{}, refused("sync "+job.ResourceType, "only projects are backfilled")
	}
	if s.reader == nil {
		return ports.SyncPage{}, refused("sync", "no GitLab API token configured")
	}
	projectID, err := strconv.ParseInt(job.ResourceID, 10, 64)
	if err != nil || projectID <= 0 {
		return ports.SyncPage{}, refused("sync project", "project id is not a positive integer")
	}
	list, page, err := parseCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	body, next, err := s.reader.ProjectListPage(ctx, projectID, list, page)
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
		// A provider answer without the documented shape: retried within the budget.
		return ports.SyncPage{}, &inbox.ProviderError{Provider: "gitlab", Op: "GET /projects/{id}/" + list,
			Kind: inbox.ProviderUnreadable, Status: 200, Err: errors.New("page does not have the documented shape")}
	}
	out := ports.SyncPage{Items: bp.Items(), Write: func(ctx context.Context, tx ports.Tx) error {
		return bp.Write(ctx, tx, s.store, job.WorkspaceID)
	}}
	switch {
	case next > 0:
		out.Next = list + ":" + strconv.Itoa(next)
	case list == lists[0]:
		out.Next = lists[1] + ":1"
	default:
		out.Next, out.Done = list+":done", true
	}
	return out, nil
}

func parseCursor(cursor string) (string, int, error) {
	if cursor == "" {
		return lists[0], 1, nil
	}
	list, n, ok := strings.Cut(cursor, ":")
	page, err := strconv.Atoi(n)
	if !ok || err != nil || page < 1 || (list != lists[0] && list != lists[1]) {
		return "", 0, fmt.Errorf("gitlab sync: cursor %q is not <list>:<page>", cursor)
	}
	return list, page, nil
}
