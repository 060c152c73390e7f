// Package gitlabread serves the GitLab mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/gitlab/projects
//	GET /api/workspaces/{ws}/gitlab/projects/{id}/merge-requests
//
// Lists are paged like every list of the API ({"items","page","size","total"}); every query
// binds the workspace, so a project of another workspace is 404.
package gitlabread

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store reads the GitLab mirror; adapters/gitlab/gitlabmirror.Store is one.
type Store interface {
	// ListProjects errors: database failures.
	ListProjects(ctx context.Context, ws int64, page ports.PageRequest) ([]gitlabmodel.ProjectView, int, error)
	// ListMergeRequests errors: ports.ErrNotFound for a project the workspace does not have.
	ListMergeRequests(ctx context.Context, ws, projectID int64, page ports.PageRequest) ([]gitlabmodel.MergeRequestView, int, error)
}

type api struct {
	store Store
	log   ports.Logger
}

// Config is what the routes need.
type Config struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Store   Store
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Auth == nil || cfg.Members == nil || cfg.Store == nil {
		return errors.New("gitlabread: an authenticator, a member directory and a store are required")
	}
	a := api{store: cfg.Store, log: cfg.Log}
	g := managementapi.MemberRoutes(r, cfg.Auth, cfg.Members, "/gitlab")
	g.GET("/projects", a.projects)
	g.GET("/projects/:id/merge-requests", a.mergeRequests)
	return nil
}

func (a api) fail(c *gin.Context, err error) {
	httperr.WriteLogged(c, err, a.log, "gitlab mirror read failed")
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

func (a api) projects(c *gin.Context) {
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, a.store.ListProjects, toProjectJSON); err != nil {
		a.fail(c, err)
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
	var updated *time.Time
	if !m.Version.UpdatedAt.IsZero() {
		updated = &m.Version.UpdatedAt
	}
	return mergeRequestJSON{
		ID: m.ID, ProjectID: m.ProjectID, IID: m.IID, Title: m.Title, State: m.State, Draft: m.Draft,
		SourceBranch: m.SourceBranch, TargetBranch: m.TargetBranch, HeadSHA: m.HeadSHA,
		MergeStatus: m.MergeStatus, AuthorID: m.AuthorID, WebURL: m.WebURL, CreatedAt: timestamp(m.CreatedAt),
		UpdatedAt: timestamp(updated), MergedAt: timestamp(m.MergedAt), ClosedAt: timestamp(m.ClosedAt),
		Ready: m.Ready, ReadinessReason: m.ReadinessReason, ApprovalsLeft: m.ApprovalsLeft,
	}
}

// mergeRequests lists the merge requests of project :id; anything but a positive id names no
// project (404, before the paging is read).
func (a api) mergeRequests(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		a.fail(c, ports.ErrNotFound)
		return
	}
	read := func(ctx context.Context, ws int64, page ports.PageRequest) ([]gitlabmodel.MergeRequestView, int, error) {
		return a.store.ListMergeRequests(ctx, ws, id, page)
	}
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, read, toMergeRequestJSON); err != nil {
		a.fail(c, err)
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
