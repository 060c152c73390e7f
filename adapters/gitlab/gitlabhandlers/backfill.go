package gitlabhandlers

import (
	"cmp"
	"context"
	"slices"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Backfill pages (adapters/gitlab/gitlabsync): GitLab's REST issues and merge requests mapped
// to the same mirror rows the webhook handlers write, through the same Store methods, with
// event id 0, so the version rule decides between a page and a webhook as between two
// webhooks (a webhook with the same updated_at wins; a newer updated_at wins whoever wrote it).

// BackfillWriter is what a backfill page writes through.
type BackfillWriter interface {
	UpsertProject(ctx context.Context, tx ports.Tx, ws int64, p gitlabmodel.Project) error
	UpsertIssue(ctx context.Context, tx ports.Tx, ws int64, i gitlabmodel.Issue) error
	UpsertMergeRequest(ctx context.Context, tx ports.Tx, ws int64, mr gitlabmodel.MergeRequest) error
}

// BackfillPage is one page of a project's issues or merge requests.
type BackfillPage struct {
	Issues        []gitlabmodel.Issue
	MergeRequests []gitlabmodel.MergeRequest
}

// Items is how many objects the page writes.
func (p BackfillPage) Items() int { return len(p.Issues) + len(p.MergeRequests) }

type restRef struct {
	ID glID `json:"id"`
}

type restIssue struct {
	ID          glID     `json:"id"`
	IID         int      `json:"iid"`
	ProjectID   glID     `json:"project_id"`
	Title       string   `json:"title"`
	Description *string  `json:"description"`
	State       string   `json:"state"`
	Author      *restRef `json:"author"`
	Milestone   *restRef `json:"milestone"`
	Labels      []string `json:"labels"`
	WebURL      string   `json:"web_url"`
	CreatedAt   glTime   `json:"created_at"`
	UpdatedAt   glTime   `json:"updated_at"`
	ClosedAt    glTime   `json:"closed_at"`
}

type restMergeRequest struct {
	ID           glID     `json:"id"`
	IID          int      `json:"iid"`
	ProjectID    glID     `json:"project_id"`
	Title        string   `json:"title"`
	Description  *string  `json:"description"`
	State        string   `json:"state"`
	Draft        bool     `json:"draft"`
	WIP          bool     `json:"work_in_progress"`
	SourceBranch string   `json:"source_branch"`
	TargetBranch string   `json:"target_branch"`
	SHA          string   `json:"sha"`
	MergeStatus  string   `json:"merge_status"`
	Author       *restRef `json:"author"`
	WebURL       string   `json:"web_url"`
	CreatedAt    glTime   `json:"created_at"`
	UpdatedAt    glTime   `json:"updated_at"`
	MergedAt     glTime   `json:"merged_at"`
	ClosedAt     glTime   `json:"closed_at"`
}

type restProject struct {
	ID                glID     `json:"id"`
	Name              string   `json:"name"`
	PathWithNamespace string   `json:"path_with_namespace"`
	WebURL            string   `json:"web_url"`
	DefaultBranch     string   `json:"default_branch"`
	Visibility        string   `json:"visibility"`
	Namespace         *restRef `json:"namespace"`
}

func refID(r *restRef) *int64 {
	if r == nil {
		return nil
	}
	return r.ID.ptr()
}

const backfillEvent = "backfill"

// DecodeBackfillProjects maps a page of GET /groups/{id}/projects to the project rows that
// discovery writes. A page knows no delivery and GitLab's project answer no change time of the
// fields written, so the version is the zero one (no timestamp, event id 0): a project row a
// webhook discovered keeps the webhook's fields, and every later webhook replaces the page's.
// Errors: a parsing failure.
func DecodeBackfillProjects(body []byte) ([]gitlabmodel.Project, error) {
	var list []restProject
	if err := decode(backfillEvent, body, &list); err != nil {
		return nil, err
	}
	out := make([]gitlabmodel.Project, 0, len(list))
	for _, a := range list {
		if a.ID <= 0 {
			return nil, malformed(backfillEvent, "project needs an id")
		}
		out = append(out, gitlabmodel.Project{
			ID: int64(a.ID), NamespaceID: refID(a.Namespace), Name: a.Name, PathWithNamespace: a.PathWithNamespace,
			WebURL: a.WebURL, DefaultBranch: a.DefaultBranch, Visibility: a.Visibility,
		})
	}
	return out, nil
}

// DecodeBackfillIssues maps a page of GET /projects/{id}/issues. Errors: a parsing failure.
func DecodeBackfillIssues(body []byte, projectID int64) (BackfillPage, error) {
	var list []restIssue
	if err := decode(backfillEvent, body, &list); err != nil {
		return BackfillPage{}, err
	}
	var p BackfillPage
	for _, a := range list {
		if a.ID <= 0 || a.IID <= 0 {
			return BackfillPage{}, malformed(backfillEvent, "issue needs an id and an iid")
		}
		labels := a.Labels
		if labels == nil {
			labels = []string{}
		}
		p.Issues = append(p.Issues, gitlabmodel.Issue{
			ID: int64(a.ID), ProjectID: projectID, IID: a.IID, Title: a.Title, Description: a.Description,
			State: a.State, AuthorID: refID(a.Author), MilestoneID: refID(a.Milestone), Labels: labels,
			WebURL: a.WebURL, CreatedAt: a.CreatedAt.ptr(), ClosedAt: a.ClosedAt.ptr(),
			Version: versionOf(a.UpdatedAt.or(a.CreatedAt), 0),
		})
	}
	return p, nil
}

// DecodeBackfillMergeRequests maps a page of GET /projects/{id}/merge_requests.
func DecodeBackfillMergeRequests(body []byte, projectID int64) (BackfillPage, error) {
	var list []restMergeRequest
	if err := decode(backfillEvent, body, &list); err != nil {
		return BackfillPage{}, err
	}
	var p BackfillPage
	for _, a := range list {
		if a.ID <= 0 || a.IID <= 0 {
			return BackfillPage{}, malformed(backfillEvent, "merge request needs an id and an iid")
		}
		p.MergeRequests = append(p.MergeRequests, gitlabmodel.MergeRequest{
			ID: int64(a.ID), ProjectID: projectID, IID: a.IID, Title: a.Title, Description: a.Description,
			State: a.State, Draft: a.Draft || a.WIP, SourceBranch: a.SourceBranch, TargetBranch: a.TargetBranch,
			HeadSHA: a.SHA, MergeStatus: a.MergeStatus, AuthorID: refID(a.Author), WebURL: a.WebURL,
			CreatedAt: a.CreatedAt.ptr(), MergedAt: a.MergedAt.ptr(), ClosedAt: a.ClosedAt.ptr(),
			Version: versionOf(a.UpdatedAt.or(a.CreatedAt), 0),
		})
	}
	return p, nil
}

// Write writes the page in tx for workspace ws, each kind in id order.
func (p BackfillPage) Write(ctx context.Context, tx ports.Tx, store BackfillWriter, ws int64) error {
	is := slices.Clone(p.Issues)
	slices.SortFunc(is, func(a, b gitlabmodel.Issue) int { return cmp.Compare(a.ID, b.ID) })
	for _, i := range is {
		if err := store.UpsertIssue(ctx, tx, ws, i); err != nil {
			return err
		}
	}
	mrs := slices.Clone(p.MergeRequests)
	slices.SortFunc(mrs, func(a, b gitlabmodel.MergeRequest) int { return cmp.Compare(a.ID, b.ID) })
	for _, mr := range mrs {
		if err := store.UpsertMergeRequest(ctx, tx, ws, mr); err != nil {
			return err
		}
	}
	return nil
}
