// Package gitlabread serves the GitLab mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/gitlab/projects
//	GET /api/workspaces/{ws}/gitlab/projects/{id}/merge-requests
//
// Lists are paged like every list of the API ({"items","page","size","total"}); every query
// binds the workspace, so a project of another workspace is 404. Who may call it: every member
// of the workspace and the instance administrator (readkit).
package gitlabread

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store reads the GitLab mirror; adapters/gitlab/gitlabmirror.Store is one.
type Store interface {
	// ListProjects errors: database failures.
	ListProjects(ctx context.Context, ws int64, page ports.PageRequest) ([]gitlabmodel.ProjectView, int, error)
	// ListMergeRequests errors: ports.ErrNotFound for a project the workspace does not have.
	ListMergeRequests(ctx context.Context, ws, projectID int64, page ports.PageRequest) ([]gitlabmodel.MergeRequestView, int, error)
}

// Config is what the routes need.
type Config = readkit.Config[Store]

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	return readkit.Mount(r, "gitlabread", "/gitlab", cfg, func(g *readkit.Group) {
		readkit.List(g, "/projects", cfg.Store.ListProjects, toProjectJSON)
		// The merge requests of project :id; anything but a positive id names no project (404).
		readkit.ListOfID(g, "/projects/:id/merge-requests", cfg.Store.ListMergeRequests, toMergeRequestJSON)
	})
}

type projectJSON struct {
	ID                int64  `json:"id"`
	NamespaceID       *int64 `json:"namespaceId"`
	Name              string `json:"name"`
	PathWithNamespace string `json:"pathWithNamespace"`
	WebURL            string `json:"webUrl"`
	DefaultBranch     string `json:"defaultBranch"`
	Visibility        string `json:"visibility"`
	Monitored         bool   `json:"monitored"`
}

func toProjectJSON(p gitlabmodel.ProjectView) projectJSON {
	return projectJSON{
		ID: p.ID, NamespaceID: p.NamespaceID, Name: p.Name, PathWithNamespace: p.PathWithNamespace,
		WebURL: p.WebURL, DefaultBranch: p.DefaultBranch, Visibility: p.Visibility, Monitored: p.Monitored,
	}
}

type mergeRequestJSON struct {
	ID              int64   `json:"id"`
	ProjectID       int64   `json:"projectId"`
	IID             int     `json:"iid"`
	Title           string  `json:"title"`
	State           string  `json:"state"`
	Draft           bool    `json:"draft"`
	SourceBranch    string  `json:"sourceBranch"`
	TargetBranch    string  `json:"targetBranch"`
	HeadSHA         string  `json:"headSha"`
	MergeStatus     string  `json:"mergeStatus"`
	AuthorID        *int64  `json:"authorId" person:"id"`
	WebURL          string  `json:"webUrl"`
	CreatedAt       *string `json:"createdAt"`
	UpdatedAt       *string `json:"updatedAt"`
	MergedAt        *string `json:"mergedAt"`
	ClosedAt        *string `json:"closedAt"`
	Ready           *bool   `json:"ready"`
	ReadinessReason string  `json:"readinessReason"`
	ApprovalsLeft   *int    `json:"approvalsLeft"`
}

func toMergeRequestJSON(m gitlabmodel.MergeRequestView) mergeRequestJSON {
	return mergeRequestJSON{
		ID: m.ID, ProjectID: m.ProjectID, IID: m.IID, Title: m.Title, State: m.State, Draft: m.Draft,
		SourceBranch: m.SourceBranch, TargetBranch: m.TargetBranch, HeadSHA: m.HeadSHA,
		MergeStatus: m.MergeStatus, AuthorID: m.AuthorID, WebURL: m.WebURL, CreatedAt: readkit.Timestamp(m.CreatedAt),
		UpdatedAt: readkit.Updated(m.Version.UpdatedAt), MergedAt: readkit.Timestamp(m.MergedAt),
		ClosedAt: readkit.Timestamp(m.ClosedAt), Ready: m.Ready, ReadinessReason: m.ReadinessReason,
		ApprovalsLeft: m.ApprovalsLeft,
	}
}
