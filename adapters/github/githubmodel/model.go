// Package githubmodel is the GitHub provider's model: the entities its handlers write (each with the
// Version rule that orders writes of one row), the mirror store interfaces the handlers write
// through (Store and its parts, ports.go) and the GitHub API reader and installation verifier
// they call. The API client (githubapi) and the mirror store (githubmirror) import this
// package, not the handlers (githubhandlers).
package githubmodel

import (
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

// Version is what decides whether a mirror write may replace the stored row: the provider's
// own timestamp of the object (UpdatedAt; zero when GitHub gives none) and the inbox row whose
// handler wrote it (EventID; 0 outside dispatch). A write applies when its version is not older
// than the stored one, compared as the pair (UpdatedAt, EventID): an older event never
// overwrites newer data, an equal timestamp is decided by the later-admitted delivery, and a
// retry or replay of the same delivery writes the same state again. A replayed older delivery
// keeps its row id, so it cannot rewind what later deliveries wrote.
type Version struct {
	UpdatedAt time.Time
	EventID   int64
}

// User is a GitHub account as events show it. Users are upserted on their natural key in their
// own transaction, apart from the handler's step.
type User struct {
	ID        int64
	Login     string
	Type      string
	AvatarURL string
	Version   Version
}

// Organization is a GitHub organization.
type Organization struct {
	ID          int64
	Login       string
	Description *string
	Deleted     bool
	Version     Version
}

// Repository is a GitHub repository.
type Repository struct {
	ID            int64
	OwnerID       int64
	OwnerLogin    string
	Name          string
	FullName      string
	Private       bool
	Visibility    string
	DefaultBranch string
	Archived      bool
	Fork          bool
	Description   *string
	HTMLURL       string
	CreatedAt     *time.Time
	PushedAt      *time.Time
	Deleted       bool
	Version       Version
}

// OrganizationMember is a user's membership of an organization (Deleted: removed).
type OrganizationMember struct {
	OrganizationID int64
	UserID         int64
	Role           string
	State          string
	Deleted        bool
	Version        Version
}

// Collaborator is a user's access to a repository (the member event; Deleted: removed).
type Collaborator struct {
	RepositoryID int64
	UserID       int64
	Permission   string
	Deleted      bool
	Version      Version
}

// Team is an organization's team.
type Team struct {
	ID             int64
	OrganizationID int64
	Name           string
	Slug           string
	Description    *string
	Privacy        string
	Permission     string
	ParentID       *int64
	Deleted        bool
	Version        Version
}

// TeamMember is a user's membership of a team (Deleted: removed).
type TeamMember struct {
	TeamID  int64
	UserID  int64
	Deleted bool
	Version Version
}

// TeamRepository is a team's access to a repository (Deleted: removed).
type TeamRepository struct {
	TeamID       int64
	RepositoryID int64
	Permission   string
	Deleted      bool
	Version      Version
}

// Label is a repository's label. Labels are upserted on their natural key in their own
// transaction, apart from the handler's step.
type Label struct {
	ID           int64
	RepositoryID int64
	Name         string
	Color        string
	Description  *string
	Default      bool
	Deleted      bool
	Version      Version
}

// Milestone is a repository's milestone.
type Milestone struct {
	ID           int64
	RepositoryID int64
	Number       int
	Title        string
	Description  *string
	State        string
	DueOn        *time.Time
	ClosedAt     *time.Time
	CreatedAt    *time.Time
	Deleted      bool
	Version      Version
}

// Issue is a repository's issue (not a pull request's issue side).
type Issue struct {
	ID           int64
	RepositoryID int64
	Number       int
	Title        string
	Body         *string
	State        string
	StateReason  *string
	Locked       bool
	AuthorID     *int64
	MilestoneID  *int64
	LabelIDs     []int64
	AssigneeIDs  []int64
	CommentCount int
	HTMLURL      string
	CreatedAt    *time.Time
	ClosedAt     *time.Time
	Deleted      bool
	Version      Version
}

// SubIssue links a parent issue to one of its sub-issues (Deleted: removed).
type SubIssue struct {
	ParentIssueID int64
	SubIssueID    int64
	Deleted       bool
	Version       Version
}

// IssueDependency records that one issue is blocked by another (Deleted: removed).
type IssueDependency struct {
	BlockedIssueID  int64
	BlockingIssueID int64
	Deleted         bool
	Version         Version
}

// IssueComment is a comment on an issue or on a pull request's conversation.
type IssueComment struct {
	ID           int64
	RepositoryID int64
	IssueID      int64
	AuthorID     *int64
	Body         *string
	HTMLURL      string
	CreatedAt    *time.Time
	Deleted      bool
	Version      Version
}

// PullRequest is a repository's pull request.
type PullRequest struct {
	ID                   int64
	RepositoryID         int64
	Number               int
	Title                string
	Body                 *string
	State                string
	Draft                bool
	Locked               bool
	Merged               bool
	AuthorID             *int64
	HeadRef              string
	HeadSHA              string
	BaseRef              string
	BaseSHA              string
	MilestoneID          *int64
	LabelIDs             []int64
	AssigneeIDs          []int64
	RequestedReviewerIDs []int64
	HTMLURL              string
	CreatedAt            *time.Time
	ClosedAt             *time.Time
	MergedAt             *time.Time
	Version              Version
}

// PullRequestHead is the processing context the check steps of a pull request need: the
// pull request as the mirror holds it after the event write (which may be newer than the
// payload, when the payload lost to a newer stored version).
type PullRequestHead struct {
	ID           int64
	RepositoryID int64
	HeadSHA      string
	State        string
}

// Review is a pull request review.
type Review struct {
	ID            int64
	RepositoryID  int64
	PullRequestID int64
	AuthorID      *int64
	State         string
	Body          *string
	CommitID      string
	SubmittedAt   *time.Time
	Version       Version
}

// ReviewComment is a comment on a pull request's diff.
type ReviewComment struct {
	ID            int64
	RepositoryID  int64
	PullRequestID int64
	ReviewID      *int64
	InReplyToID   *int64
	AuthorID      *int64
	Path          string
	Line          *int
	Body          *string
	CommitID      string
	CreatedAt     *time.Time
	Deleted       bool
	Version       Version
}

// ReviewThread is a pull request review thread; its node id is its provider id.
type ReviewThread struct {
	NodeID        string
	RepositoryID  int64
	PullRequestID int64
	Resolved      bool
	Path          string
	CommentIDs    []int64
	Version       Version
}

// Commit is a commit of a repository, keyed by repository and SHA.
type Commit struct {
	RepositoryID   int64
	SHA            string
	Message        string
	AuthorName     string
	AuthorEmail    string
	AuthorLogin    *string
	CommitterName  string
	CommitterEmail string
	CommittedAt    *time.Time
	HTMLURL        string
	Version        Version
}

// Ref is where a push left a branch or tag (Deleted: the push deleted it).
type Ref struct {
	RepositoryID int64
	Ref          string
	SHA          string
	Deleted      bool
	Version      Version
}

// CommitStatus is a commit status (the status event).
type CommitStatus struct {
	ID           int64
	RepositoryID int64
	SHA          string
	Context      string
	State        string
	Description  *string
	TargetURL    *string
	CreatedAt    *time.Time
	Version      Version
}

// CheckSuite is a check suite of a commit.
type CheckSuite struct {
	ID           int64
	RepositoryID int64
	HeadSHA      string
	HeadBranch   *string
	Status       string
	Conclusion   *string
	AppSlug      *string
	CreatedAt    *time.Time
	Version      Version
}

// CheckRun is a check run of a commit. The provider reader leaves RepositoryID and Version
// to the handler, which knows the repository and the delivery.
type CheckRun struct {
	ID           int64
	RepositoryID int64
	CheckSuiteID *int64
	HeadSHA      string
	Name         string
	Status       string
	Conclusion   *string
	StartedAt    *time.Time
	CompletedAt  *time.Time
	Version      Version
}

// AppConnection is the GitHub App connection of an installation, as read under its lifecycle
// lock.
type AppConnection struct {
	ID          int64
	WorkspaceID int64
	State       connection.State
}

// Installation is the instance-wide record of a GitHub App installation.
type Installation struct {
	ID                  int64
	AccountID           int64
	AccountLogin        string
	AccountType         string
	TargetType          string
	RepositorySelection string
	// State is ACTIVE, SUSPENDED or DELETED as GitHub reports the installation.
	State      string
	LastAction string
	// ConnectionID is the App connection the event found (0: none, nothing to repair).
	ConnectionID int64
	Version      Version
}

// InstallationRepository is a repository an installation covers, for one workspace.
type InstallationRepository struct {
	InstallationID int64
	RepositoryID   int64
	FullName       string
	Private        bool
	Deleted        bool
	Version        Version
}
