package githubmirror

import "time"

// EntityViews shapes the other mirrored entities for the change feed (githubread.Views).
type EntityViews interface {
	Label(LabelRow) any
	Milestone(MilestoneRow) any
	IssueComment(IssueCommentRow) any
	Review(ReviewRow) any
	ReviewComment(ReviewCommentRow) any
	ReviewThread(ReviewThreadRow) any
	CommitStatus(CommitStatusRow) any
	CheckSuite(CheckSuiteRow) any
	CheckRun(CheckRunRow) any
	Member(MemberRow) any
	Collaborator(CollaboratorRow) any
	Team(TeamRow) any
	TeamMember(TeamMemberRow) any
	TeamRepository(TeamRepositoryRow) any
}

// LabelRow is a mirrored label.
type LabelRow struct {
	ID           int64
	RepositoryID int64
	Name         string
	Color        string
	Description  *string
	Default      bool
}

// MilestoneRow is a mirrored milestone.
type MilestoneRow struct {
	ID           int64
	RepositoryID int64
	Number       int
	Title        string
	Description  *string
	State        string
	DueOn        *time.Time
	ClosedAt     *time.Time
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// IssueCommentRow is a mirrored issue (or pull request conversation) comment with its
// author's login.
type IssueCommentRow struct {
	ID           int64
	RepositoryID int64
	IssueID      int64
	AuthorLogin  *string
	Body         *string
	HTMLURL      string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// ReviewRow is a mirrored pull request review with its author's login.
type ReviewRow struct {
	ID            int64
	RepositoryID  int64
	PullRequestID int64
	AuthorLogin   *string
	State         string
	Body          *string
	CommitID      string
	SubmittedAt   *time.Time
}

// ReviewCommentRow is a mirrored review comment with its author's login.
type ReviewCommentRow struct {
	ID            int64
	RepositoryID  int64
	PullRequestID int64
	ReviewID      *int64
	InReplyToID   *int64
	AuthorLogin   *string
	Path          string
	Line          *int
	Body          *string
	CommitID      string
	CreatedAt     *time.Time
	UpdatedAt     *time.Time
}

// ReviewThreadRow is a mirrored review thread (its node id is its provider id).
type ReviewThreadRow struct {
	NodeID        string
	RepositoryID  int64
	PullRequestID int64
	Resolved      bool
	Path          string
	CommentIDs    []int64
}

// CommitStatusRow is a mirrored commit status.
type CommitStatusRow struct {
	ID           int64
	RepositoryID int64
	SHA          string
	Context      string
	State        string
	Description  *string
	TargetURL    *string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// CheckSuiteRow is a mirrored check suite.
type CheckSuiteRow struct {
	ID           int64
	RepositoryID int64
	HeadSHA      string
	HeadBranch   *string
	Status       string
	Conclusion   *string
	AppSlug      *string
	CreatedAt    *time.Time
	UpdatedAt    *time.Time
}

// CheckRunRow is a mirrored check run.
type CheckRunRow struct {
	ID           int64
	RepositoryID int64
	CheckSuiteID *int64
	HeadSHA      string
	Name         string
	Status       string
	Conclusion   *string
	StartedAt    *time.Time
	CompletedAt  *time.Time
}

// MemberRow is a mirrored organization membership with the member's login.
type MemberRow struct {
	OrganizationID int64
	UserID         int64
	Login          *string
	Role           string
	State          string
}

// CollaboratorRow is a mirrored repository collaborator with the user's login.
type CollaboratorRow struct {
	RepositoryID int64
	UserID       int64
	Login        *string
	Permission   string
}

// TeamRow is a mirrored team.
type TeamRow struct {
	ID             int64
	OrganizationID *int64
	Name           string
	Slug           string
	Description    *string
	Privacy        string
	Permission     string
	ParentID       *int64
}

// TeamMemberRow is a mirrored team membership with the member's login.
type TeamMemberRow struct {
	TeamID int64
	UserID int64
	Login  *string
}

// TeamRepositoryRow is a repository a mirrored team has access to.
type TeamRepositoryRow struct {
	TeamID       int64
	RepositoryID int64
	Permission   string
}
