package gitlabread

import (
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
)

// The change feed's views of the GitLab entities this API lists no page of (projects use the
// API's own): shaped like the mirror row, camelCase as the other views.

type groupJSON struct {
	ID        int64   `json:"id"`
	ParentID  *int64  `json:"parentId"`
	Name      string  `json:"name"`
	Path      string  `json:"path"`
	FullPath  string  `json:"fullPath"`
	UpdatedAt *string `json:"updatedAt"`
}

func (Views) Group(g gitlabmodel.Group) any {
	return groupJSON{ID: g.ID, ParentID: g.ParentID, Name: g.Name, Path: g.Path, FullPath: g.FullPath,
		UpdatedAt: readkit.Updated(g.Version.UpdatedAt)}
}

func (Views) Project(p gitlabmodel.ProjectView) any { return toProjectJSON(p) }

type memberJSON struct {
	SourceType  string  `json:"sourceType"`
	SourceID    int64   `json:"sourceId"`
	UserID      int64   `json:"userId" person:"id"`
	Username    string  `json:"username" person:"login"`
	AccessLevel string  `json:"accessLevel"`
	ExpiresAt   *string `json:"expiresAt"`
	UpdatedAt   *string `json:"updatedAt"`
}

func (Views) Member(m gitlabmodel.Member) any {
	return memberJSON{SourceType: m.SourceType, SourceID: m.SourceID, UserID: m.UserID, Username: m.Username,
		AccessLevel: m.AccessLevel, ExpiresAt: readkit.Timestamp(m.ExpiresAt), UpdatedAt: readkit.Updated(m.Version.UpdatedAt)}
}

type milestoneJSON struct {
	ID          int64   `json:"id"`
	ProjectID   *int64  `json:"projectId"`
	GroupID     *int64  `json:"groupId"`
	IID         int     `json:"iid"`
	Title       string  `json:"title"`
	Description *string `json:"description"`
	State       string  `json:"state"`
	DueDate     *string `json:"dueDate"`
	UpdatedAt   *string `json:"updatedAt"`
}

func (Views) Milestone(m gitlabmodel.Milestone) any {
	var due *string
	if m.DueDate != nil {
		d := m.DueDate.UTC().Format(time.DateOnly)
		due = &d
	}
	return milestoneJSON{ID: m.ID, ProjectID: m.ProjectID, GroupID: m.GroupID, IID: m.IID, Title: m.Title,
		Description: m.Description, State: m.State, DueDate: due, UpdatedAt: readkit.Updated(m.Version.UpdatedAt)}
}

type issueJSON struct {
	ID          int64    `json:"id"`
	ProjectID   int64    `json:"projectId"`
	IID         int      `json:"iid"`
	Title       string   `json:"title"`
	State       string   `json:"state"`
	AuthorID    *int64   `json:"authorId" person:"id"`
	MilestoneID *int64   `json:"milestoneId"`
	Labels      []string `json:"labels"`
	WebURL      string   `json:"webUrl"`
	CreatedAt   *string  `json:"createdAt"`
	UpdatedAt   *string  `json:"updatedAt"`
	ClosedAt    *string  `json:"closedAt"`
}

func (Views) Issue(i gitlabmodel.Issue) any {
	return issueJSON{ID: i.ID, ProjectID: i.ProjectID, IID: i.IID, Title: i.Title, State: i.State, AuthorID: i.AuthorID,
		MilestoneID: i.MilestoneID, Labels: i.Labels, WebURL: i.WebURL, CreatedAt: readkit.Timestamp(i.CreatedAt),
		UpdatedAt: readkit.Updated(i.Version.UpdatedAt), ClosedAt: readkit.Timestamp(i.ClosedAt)}
}

type noteJSON struct {
	ID           int64   `json:"id"`
	ProjectID    int64   `json:"projectId"`
	NoteableType string  `json:"noteableType"`
	NoteableID   *int64  `json:"noteableId"`
	CommitSHA    *string `json:"commitSha"`
	AuthorID     *int64  `json:"authorId" person:"id"`
	Body         *string `json:"body"`
	System       bool    `json:"system"`
	WebURL       string  `json:"webUrl"`
	CreatedAt    *string `json:"createdAt"`
	UpdatedAt    *string `json:"updatedAt"`
}

func (Views) Note(n gitlabmodel.Note) any {
	return noteJSON{ID: n.ID, ProjectID: n.ProjectID, NoteableType: n.NoteableType, NoteableID: n.NoteableID,
		CommitSHA: n.CommitSHA, AuthorID: n.AuthorID, Body: n.Body, System: n.System, WebURL: n.WebURL,
		CreatedAt: readkit.Timestamp(n.CreatedAt), UpdatedAt: readkit.Updated(n.Version.UpdatedAt)}
}

type pipelineJSON struct {
	ID             int64   `json:"id"`
	ProjectID      int64   `json:"projectId"`
	Ref            string  `json:"ref"`
	SHA            string  `json:"sha"`
	Status         string  `json:"status"`
	Source         string  `json:"source"`
	MergeRequestID *int64  `json:"mergeRequestId"`
	CreatedAt      *string `json:"createdAt"`
	FinishedAt     *string `json:"finishedAt"`
	UpdatedAt      *string `json:"updatedAt"`
}

func (Views) Pipeline(p gitlabmodel.Pipeline) any {
	return pipelineJSON{ID: p.ID, ProjectID: p.ProjectID, Ref: p.Ref, SHA: p.SHA, Status: p.Status, Source: p.Source,
		MergeRequestID: p.MergeRequestID, CreatedAt: readkit.Timestamp(p.CreatedAt), FinishedAt: readkit.Timestamp(p.FinishedAt),
		UpdatedAt: readkit.Updated(p.Version.UpdatedAt)}
}

// commitJSON carries no e-mail address, as the GitHub commit view.
type commitJSON struct {
	ProjectID  int64   `json:"projectId"`
	SHA        string  `json:"sha"`
	Title      string  `json:"title"`
	Message    string  `json:"message"`
	AuthorName string  `json:"authorName" person:"name"`
	AuthoredAt *string `json:"authoredAt" person:"-"`
	URL        string  `json:"url"`
}

func (Views) Commit(c gitlabmodel.Commit) any {
	return commitJSON{ProjectID: c.ProjectID, SHA: c.SHA, Title: c.Title, Message: c.Message, AuthorName: c.AuthorName,
		AuthoredAt: readkit.Timestamp(c.AuthoredAt), URL: c.URL}
}
