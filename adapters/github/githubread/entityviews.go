package githubread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
)

// The change feed's views of the mirrored entities the read API has no list of: shaped like
// the mirror row, camelCase as the other views, a user named by login (author, login) beside
// its id where the row has one.

type labelJSON struct {
	ID           int64   `json:"id"`
	RepositoryID int64   `json:"repositoryId"`
	Name         string  `json:"name"`
	Color        string  `json:"color"`
	Description  *string `json:"description"`
	Default      bool    `json:"default"`
}

func (Views) Label(l githubmirror.LabelRow) any {
	return labelJSON{ID: l.ID, RepositoryID: l.RepositoryID, Name: l.Name, Color: l.Color, Description: l.Description,
		Default: l.Default}
}

type milestoneJSON struct {
	ID           int64   `json:"id"`
	RepositoryID int64   `json:"repositoryId"`
	Number       int     `json:"number"`
	Title        string  `json:"title"`
	Description  *string `json:"description"`
	State        string  `json:"state"`
	DueOn        *string `json:"dueOn"`
	ClosedAt     *string `json:"closedAt"`
	CreatedAt    *string `json:"createdAt"`
	UpdatedAt    *string `json:"updatedAt"`
}

func (Views) Milestone(m githubmirror.MilestoneRow) any {
	return milestoneJSON{ID: m.ID, RepositoryID: m.RepositoryID, Number: m.Number, Title: m.Title,
		Description: m.Description, State: m.State, DueOn: readkit.Timestamp(m.DueOn), ClosedAt: readkit.Timestamp(m.ClosedAt),
		CreatedAt: readkit.Timestamp(m.CreatedAt), UpdatedAt: readkit.Timestamp(m.UpdatedAt)}
}

type issueCommentJSON struct {
	ID           int64   `json:"id"`
	RepositoryID int64   `json:"repositoryId"`
	IssueID      int64   `json:"issueId"`
	Author       *string `json:"author" person:"login"`
	Body         *string `json:"body"`
	HTMLURL      string  `json:"htmlUrl"`
	CreatedAt    *string `json:"createdAt"`
	UpdatedAt    *string `json:"updatedAt"`
}

func (Views) IssueComment(c githubmirror.IssueCommentRow) any {
	return issueCommentJSON{ID: c.ID, RepositoryID: c.RepositoryID, IssueID: c.IssueID, Author: c.AuthorLogin,
		Body: c.Body, HTMLURL: c.HTMLURL, CreatedAt: readkit.Timestamp(c.CreatedAt), UpdatedAt: readkit.Timestamp(c.UpdatedAt)}
}

type reviewJSON struct {
	ID            int64   `json:"id"`
	RepositoryID  int64   `json:"repositoryId"`
	PullRequestID int64   `json:"pullRequestId"`
	Author        *string `json:"author" person:"login"`
	State         string  `json:"state"`
	Body          *string `json:"body"`
	CommitID      string  `json:"commitId"`
	SubmittedAt   *string `json:"submittedAt"`
}

func (Views) Review(r githubmirror.ReviewRow) any {
	return reviewJSON{ID: r.ID, RepositoryID: r.RepositoryID, PullRequestID: r.PullRequestID, Author: r.AuthorLogin,
		State: r.State, Body: r.Body, CommitID: r.CommitID, SubmittedAt: readkit.Timestamp(r.SubmittedAt)}
}

type reviewCommentJSON struct {
	ID            int64   `json:"id"`
	RepositoryID  int64   `json:"repositoryId"`
	PullRequestID int64   `json:"pullRequestId"`
	ReviewID      *int64  `json:"reviewId"`
	InReplyToID   *int64  `json:"inReplyToId"`
	Author        *string `json:"author" person:"login"`
	Path          string  `json:"path"`
	Line          *int    `json:"line"`
	Body          *string `json:"body"`
	CommitID      string  `json:"commitId"`
	CreatedAt     *string `json:"createdAt"`
	UpdatedAt     *string `json:"updatedAt"`
}

func (Views) ReviewComment(c githubmirror.ReviewCommentRow) any {
	return reviewCommentJSON{ID: c.ID, RepositoryID: c.RepositoryID, PullRequestID: c.PullRequestID,
		ReviewID: c.ReviewID, InReplyToID: c.InReplyToID, Author: c.AuthorLogin, Path: c.Path, Line: c.Line,
		Body: c.Body, CommitID: c.CommitID, CreatedAt: readkit.Timestamp(c.CreatedAt), UpdatedAt: readkit.Timestamp(c.UpdatedAt)}
}

type reviewThreadJSON struct {
	NodeID        string  `json:"nodeId"`
	RepositoryID  int64   `json:"repositoryId"`
	PullRequestID int64   `json:"pullRequestId"`
	Resolved      bool    `json:"resolved"`
	Path          string  `json:"path"`
	CommentIDs    []int64 `json:"commentIds"`
}

func (Views) ReviewThread(t githubmirror.ReviewThreadRow) any {
	return reviewThreadJSON{NodeID: t.NodeID, RepositoryID: t.RepositoryID, PullRequestID: t.PullRequestID,
		Resolved: t.Resolved, Path: t.Path, CommentIDs: t.CommentIDs}
}

type commitStatusJSON struct {
	ID           int64   `json:"id"`
	RepositoryID int64   `json:"repositoryId"`
	SHA          string  `json:"sha"`
	Context      string  `json:"context"`
	State        string  `json:"state"`
	Description  *string `json:"description"`
	TargetURL    *string `json:"targetUrl"`
	CreatedAt    *string `json:"createdAt"`
	UpdatedAt    *string `json:"updatedAt"`
}

func (Views) CommitStatus(c githubmirror.CommitStatusRow) any {
	return commitStatusJSON{ID: c.ID, RepositoryID: c.RepositoryID, SHA: c.SHA, Context: c.Context, State: c.State,
		Description: c.Description, TargetURL: c.TargetURL, CreatedAt: readkit.Timestamp(c.CreatedAt),
		UpdatedAt: readkit.Timestamp(c.UpdatedAt)}
}

type checkSuiteJSON struct {
	ID           int64   `json:"id"`
	RepositoryID int64   `json:"repositoryId"`
	HeadSHA      string  `json:"headSha"`
	HeadBranch   *string `json:"headBranch"`
	Status       string  `json:"status"`
	Conclusion   *string `json:"conclusion"`
	App          *string `json:"app"`
	CreatedAt    *string `json:"createdAt"`
	UpdatedAt    *string `json:"updatedAt"`
}

func (Views) CheckSuite(c githubmirror.CheckSuiteRow) any {
	return checkSuiteJSON{ID: c.ID, RepositoryID: c.RepositoryID, HeadSHA: c.HeadSHA, HeadBranch: c.HeadBranch,
		Status: c.Status, Conclusion: c.Conclusion, App: c.AppSlug, CreatedAt: readkit.Timestamp(c.CreatedAt),
		UpdatedAt: readkit.Timestamp(c.UpdatedAt)}
}

type checkRunJSON struct {
	ID           int64   `json:"id"`
	RepositoryID int64   `json:"repositoryId"`
	CheckSuiteID *int64  `json:"checkSuiteId"`
	HeadSHA      string  `json:"headSha"`
	Name         string  `json:"name"`
	Status       string  `json:"status"`
	Conclusion   *string `json:"conclusion"`
	StartedAt    *string `json:"startedAt"`
	CompletedAt  *string `json:"completedAt"`
}

func (Views) CheckRun(r githubmirror.CheckRunRow) any {
	return checkRunJSON{ID: r.ID, RepositoryID: r.RepositoryID, CheckSuiteID: r.CheckSuiteID, HeadSHA: r.HeadSHA,
		Name: r.Name, Status: r.Status, Conclusion: r.Conclusion, StartedAt: readkit.Timestamp(r.StartedAt),
		CompletedAt: readkit.Timestamp(r.CompletedAt)}
}

type memberJSON struct {
	OrganizationID int64   `json:"organizationId"`
	UserID         int64   `json:"userId" person:"id"`
	Login          *string `json:"login" person:"login"`
	Role           string  `json:"role"`
	State          string  `json:"state"`
}

func (Views) Member(m githubmirror.MemberRow) any {
	return memberJSON{OrganizationID: m.OrganizationID, UserID: m.UserID, Login: m.Login, Role: m.Role, State: m.State}
}

type collaboratorJSON struct {
	RepositoryID int64   `json:"repositoryId"`
	UserID       int64   `json:"userId" person:"id"`
	Login        *string `json:"login" person:"login"`
	Permission   string  `json:"permission"`
}

func (Views) Collaborator(c githubmirror.CollaboratorRow) any {
	return collaboratorJSON{RepositoryID: c.RepositoryID, UserID: c.UserID, Login: c.Login, Permission: c.Permission}
}

type teamJSON struct {
	ID             int64   `json:"id"`
	OrganizationID *int64  `json:"organizationId"`
	Name           string  `json:"name"`
	Slug           string  `json:"slug"`
	Description    *string `json:"description"`
	Privacy        string  `json:"privacy"`
	Permission     string  `json:"permission"`
	ParentID       *int64  `json:"parentId"`
}

func (Views) Team(t githubmirror.TeamRow) any {
	return teamJSON{ID: t.ID, OrganizationID: t.OrganizationID, Name: t.Name, Slug: t.Slug, Description: t.Description,
		Privacy: t.Privacy, Permission: t.Permission, ParentID: t.ParentID}
}

type teamMemberJSON struct {
	TeamID int64   `json:"teamId"`
	UserID int64   `json:"userId" person:"id"`
	Login  *string `json:"login" person:"login"`
}

func (Views) TeamMember(m githubmirror.TeamMemberRow) any {
	return teamMemberJSON{TeamID: m.TeamID, UserID: m.UserID, Login: m.Login}
}

type teamRepositoryJSON struct {
	TeamID       int64  `json:"teamId"`
	RepositoryID int64  `json:"repositoryId"`
	Permission   string `json:"permission"`
}

func (Views) TeamRepository(r githubmirror.TeamRepositoryRow) any {
	return teamRepositoryJSON{TeamID: r.TeamID, RepositoryID: r.RepositoryID, Permission: r.Permission}
}

func (Views) Repository(r githubmirror.RepositoryRow) any { return toRepositoryJSON(r) }

type organizationJSON struct {
	ID          int64   `json:"id"`
	Login       string  `json:"login" person:"-"`
	Description *string `json:"description"`
}

func (Views) Organization(o githubmirror.OrganizationRow) any {
	return organizationJSON{ID: o.ID, Login: o.Login, Description: o.Description}
}

type refJSON struct {
	RepositoryID int64  `json:"repositoryId"`
	Ref          string `json:"ref"`
	SHA          string `json:"sha"`
}

func (Views) Ref(r githubmirror.RefRow) any {
	return refJSON{RepositoryID: r.RepositoryID, Ref: r.Ref, SHA: r.SHA}
}

type subIssueJSON struct {
	ParentIssueID int64 `json:"parentIssueId"`
	SubIssueID    int64 `json:"subIssueId"`
	Removed       bool  `json:"removed"`
}

func (Views) SubIssue(l githubmirror.SubIssueRow) any {
	return subIssueJSON{ParentIssueID: l.ParentIssueID, SubIssueID: l.SubIssueID, Removed: l.Deleted}
}

type issueDependencyJSON struct {
	BlockedIssueID  int64 `json:"blockedIssueId"`
	BlockingIssueID int64 `json:"blockingIssueId"`
	Removed         bool  `json:"removed"`
}

func (Views) IssueDependency(l githubmirror.IssueDependencyRow) any {
	return issueDependencyJSON{BlockedIssueID: l.BlockedIssueID, BlockingIssueID: l.BlockingIssueID, Removed: l.Deleted}
}

type installationRepositoryJSON struct {
	InstallationID int64  `json:"installationId"`
	RepositoryID   int64  `json:"repositoryId"`
	FullName       string `json:"fullName"`
	Private        bool   `json:"private"`
	Removed        bool   `json:"removed"`
}

func (Views) InstallationRepository(r githubmirror.InstallationRepositoryRow) any {
	return installationRepositoryJSON{InstallationID: r.InstallationID, RepositoryID: r.RepositoryID,
		FullName: r.FullName, Private: r.Private, Removed: r.Removed}
}
