// Package gitlabmodel is the GitLab provider's model: the entities its handlers write (each with the
// Version rule that orders writes of one row), the views the read API and the change feed show
// of projects and merge requests, the mirror store interfaces the handlers write through (Store
// and its parts) and the GitLab API reader they call. The API client (gitlabapi), the mirror
// store (gitlabmirror) and the read API (gitlabread) import this package, not the handlers
// (gitlabhandlers).
package gitlabmodel

import (
	"context"
	"errors"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// Version decides whether a mirror write may replace the stored row: GitLab's own timestamp of
// the object (UpdatedAt; zero when the payload gives none) and the inbox row whose handler wrote
// it (EventID; 0 outside dispatch). A write applies when its version is not older than the
// stored one, compared as the pair: an older event never overwrites newer data, an equal
// timestamp is decided by the later-admitted delivery, and a retry of the same delivery writes
// the same state again.
type Version struct {
	UpdatedAt time.Time
	EventID   int64
}

// Group is a GitLab group or subgroup.
type Group struct {
	ID       int64
	ParentID *int64
	Name     string
	Path     string
	FullPath string
	Deleted  bool
	Version  Version
}

// Project is a GitLab project as an event shows it (discovery).
type Project struct {
	ID                int64
	NamespaceID       *int64
	Name              string
	PathWithNamespace string
	WebURL            string
	DefaultBranch     string
	Visibility        string
	Version           Version
}

// ProjectMonitor is a project event's change of whether the workspace monitors the project
// (project_create, project_destroy, project_transfer, project_rename).
type ProjectMonitor struct {
	ProjectID         int64
	Monitored         bool
	Deleted           bool
	PathWithNamespace string
	Name              string
	Version           Version
}

// Member is a user's membership of a group or project (Deleted: removed).
type Member struct {
	SourceType  string // "group" or "project"
	SourceID    int64
	UserID      int64
	Username    string
	AccessLevel string
	ExpiresAt   *time.Time
	Deleted     bool
	Version     Version
}

// Milestone is a project or group milestone.
type Milestone struct {
	ID          int64
	ProjectID   *int64
	GroupID     *int64
	IID         int
	Title       string
	Description *string
	State       string
	DueDate     *time.Time
	Deleted     bool
	Version     Version
}

// Issue is a project's issue.
type Issue struct {
	ID          int64
	ProjectID   int64
	IID         int
	Title       string
	Description *string
	State       string
	AuthorID    *int64
	MilestoneID *int64
	Labels      []string
	WebURL      string
	CreatedAt   *time.Time
	ClosedAt    *time.Time
	Deleted     bool
	Version     Version
}

// Note is a comment on a merge request, issue, commit or snippet.
type Note struct {
	ID           int64
	ProjectID    int64
	NoteableType string
	NoteableID   *int64
	CommitSHA    *string
	AuthorID     *int64
	Body         *string
	System       bool
	WebURL       string
	CreatedAt    *time.Time
	Deleted      bool
	Version      Version
}

// MergeRequest is a project's merge request (the event write).
type MergeRequest struct {
	ID           int64
	ProjectID    int64
	IID          int
	Title        string
	Description  *string
	State        string
	Draft        bool
	SourceBranch string
	TargetBranch string
	HeadSHA      string
	MergeStatus  string
	AuthorID     *int64
	WebURL       string
	CreatedAt    *time.Time
	MergedAt     *time.Time
	ClosedAt     *time.Time
	Version      Version
}

// Readiness is whether a merge request can be merged as far as this service knows, with the
// reason when it cannot and the approvals GitLab still wants (the readiness write).
type Readiness struct {
	MergeRequestID int64
	Ready          bool
	Reason         string
	ApprovalsLeft  *int
	Version        Version
}

// Pipeline is a project's CI pipeline.
type Pipeline struct {
	ID             int64
	ProjectID      int64
	Ref            string
	SHA            string
	Status         string
	Source         string
	MergeRequestID *int64
	CreatedAt      *time.Time
	FinishedAt     *time.Time
	Version        Version
}

// Push is one push as GitLab delivered it (webhook persistence).
type Push struct {
	ProjectID   int64
	Ref         string
	BeforeSHA   string
	AfterSHA    string
	UserID      *int64
	CommitCount int
	EventID     int64
}

// Commit is one commit of a push. It is immutable: a second write of the same SHA changes
// nothing.
type Commit struct {
	ProjectID   int64
	SHA         string
	Title       string
	Message     string
	AuthorName  string
	AuthorEmail string
	AuthoredAt  *time.Time
	URL         string
	EventID     int64
}

// The mirror store's ports, shaped by the handlers (gitlabhandlers) that use them. Every write
// takes the opaque ports.Tx of the step that claims it, so it commits with the step row or not
// at all.
// Errors: a store wraps database failures so that inbox.Classify sees them (fence rejections,
// inbox.ErrBusy, *inbox.TransientError); anything else uses the unknown-failure budget.

// ProjectWriter writes what project discovery and the project and subgroup events learn.
type ProjectWriter interface {
	// UpsertGroup writes a group under the version rule.
	UpsertGroup(ctx context.Context, tx ports.Tx, ws int64, g Group) error
	// UpsertProject writes a discovered project under the version rule; it never changes the
	// project's monitor state.
	UpsertProject(ctx context.Context, tx ports.Tx, ws int64, p Project) error
	// SetProjectMonitor records a monitor change under its own version rule (a project that was
	// never discovered is created with it).
	SetProjectMonitor(ctx context.Context, tx ports.Tx, ws int64, m ProjectMonitor) error
}

// WorkItemWriter writes the default-boundary work items.
type WorkItemWriter interface {
	UpsertMember(ctx context.Context, tx ports.Tx, ws int64, m Member) error
	UpsertMilestone(ctx context.Context, tx ports.Tx, ws int64, m Milestone) error
	UpsertIssue(ctx context.Context, tx ports.Tx, ws int64, i Issue) error
	UpsertNote(ctx context.Context, tx ports.Tx, ws int64, n Note) error
}

// MergeRequestWriter writes merge requests: the event write and, separately, the readiness.
type MergeRequestWriter interface {
	UpsertMergeRequest(ctx context.Context, tx ports.Tx, ws int64, mr MergeRequest) error
	// SetReadiness writes the readiness columns under their own version rule. A merge request
	// the event write did not keep is left alone.
	SetReadiness(ctx context.Context, tx ports.Tx, ws int64, r Readiness) error
}

// PipelineWriter writes pipelines.
type PipelineWriter interface {
	UpsertPipeline(ctx context.Context, tx ports.Tx, ws int64, p Pipeline) error
}

// PushWriter writes a push and its commits.
type PushWriter interface {
	// RecordPush stores the push on its natural key (project, ref, after SHA).
	RecordPush(ctx context.Context, tx ports.Tx, ws int64, p Push) error
	// InsertCommit stores a commit on its natural key (project, SHA); an existing one stays.
	InsertCommit(ctx context.Context, tx ports.Tx, ws int64, c Commit) error
	// InsertCommits stores commits, as InsertCommit does each, in one transaction and in the
	// order given; the change feed gets each new commit's change in that order.
	InsertCommits(ctx context.Context, tx ports.Tx, ws int64, cs []Commit) error
}

// Store is the whole GitLab mirror store the handlers write to.
type Store interface {
	ProjectWriter
	WorkItemWriter
	MergeRequestWriter
	PipelineWriter
	PushWriter
}

// ErrProviderNotFound is what a ProviderReader wraps when GitLab answers that the object does
// not exist (404): the handlers treat it as "nothing to read".
var ErrProviderNotFound = errors.New("gitlab object not found")

// Approvals is what GitLab's approvals endpoint says about a merge request.
type Approvals struct {
	Approved      bool
	ApprovalsLeft int
}

// ProviderReader reads GitLab's REST API. Handlers call it only outside their write
// transactions, so no transaction waits for GitLab. Errors: *inbox.ProviderError (transport
// failures, server errors and rate limits retried without budget; refusals and unreadable
// answers use the unknown-failure budget; never permanent), ErrProviderNotFound around one.
type ProviderReader interface {
	// MergeRequestApprovals reads the approval state of a project's merge request by iid,
	// with the credential acc names.
	MergeRequestApprovals(ctx context.Context, acc Access, projectID int64, iid int) (Approvals, error)
}

// Access says whose credential a read uses (CONTRACT.md "Provider access"): a sync job's
// connection (ConnectionID > 0: its own API token), or, for a handler, the API token of the
// dispatched row's workspace's live GitLab connection whose subscription of the project, or
// of one of GroupIDs (the project's namespace), is VERIFIED. Never an instance-wide token.
type Access struct {
	WorkspaceID  int64
	ConnectionID int64
	ProjectID    int64
	GroupIDs     []int64
}

// Read views of the mirror, for the read API. They live with the model so that the store and
// the HTTP adapter share one definition without importing each other.

// ProjectView is a mirrored project as the read API lists it.
type ProjectView struct {
	Project
	Monitored bool
}

// MergeRequestView is a mirrored merge request with its readiness (Ready nil: not decided yet).
type MergeRequestView struct {
	MergeRequest
	Ready           *bool
	ReadinessReason string
	ApprovalsLeft   *int
}
