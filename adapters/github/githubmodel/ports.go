package githubmodel

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The mirror store's interfaces are what their consumer, the handlers (githubhandlers), need, no
// more. Every write takes the opaque ports.Tx of the DeliveryInbox step (or Write) it
// runs in, so it commits with that step's claim or not at all; a store never opens, commits or
// rolls back a transaction itself. Every write binds the workspace of the dispatched row and
// applies the Version rule (see Version). Errors are the store's translation of database
// errors (the inbox's fence errors, *inbox.TransientError, inbox.ErrBusy) and must reach the
// consumer unchanged.

// UserWriter upserts users on their natural key (workspace, GitHub id). In a fenced transaction
// of the inbox the users are written in the round trip that commits it (a user row is
// shared by every delivery the person appears in), so nothing later in the same transaction
// may read them back.
type UserWriter interface {
	UpsertUsers(ctx context.Context, tx ports.Tx, workspaceID int64, users []User) error
	// UsersToWrite returns, in their order, the users the workspace's mirror does not hold at
	// an equal or newer version: an upsert of the others would lose to the version rule. It
	// reads committed rows without a transaction of the handler and takes no lock (a version
	// only grows; a row deleted since is as if the upsert had come before the deletion).
	UsersToWrite(ctx context.Context, workspaceID int64, users []User) ([]User, error)
}

// LabelWriter upserts labels on their natural key (workspace, GitHub id); a Deleted label is
// a tombstone.
type LabelWriter interface {
	UpsertLabels(ctx context.Context, tx ports.Tx, workspaceID int64, labels []Label) error
	// LabelsToWrite returns, in their order, the labels the workspace's mirror does not hold
	// at an equal or newer version, as UsersToWrite does for users.
	LabelsToWrite(ctx context.Context, workspaceID int64, labels []Label) ([]Label, error)
}

// RepositoryWriter writes organizations, repositories and their memberships.
type RepositoryWriter interface {
	UpsertOrganization(ctx context.Context, tx ports.Tx, workspaceID int64, o Organization) error
	UpsertRepository(ctx context.Context, tx ports.Tx, workspaceID int64, r Repository) error
	SetOrganizationMember(ctx context.Context, tx ports.Tx, workspaceID int64, m OrganizationMember) error
	SetCollaborator(ctx context.Context, tx ports.Tx, workspaceID int64, c Collaborator) error
	// Monitors reports whether the workspace subscribes, through one of its ACTIVE GitHub
	// connections, to the repository or to its owner (ownerID 0: no owner known). It reads in
	// tx, so the answer and the writes that depend on it commit together.
	Monitors(ctx context.Context, tx ports.Tx, workspaceID, repositoryID, ownerID int64) (bool, error)
}

// TeamWriter writes teams, their members and their repositories.
type TeamWriter interface {
	UpsertTeam(ctx context.Context, tx ports.Tx, workspaceID int64, t Team) error
	SetTeamMember(ctx context.Context, tx ports.Tx, workspaceID int64, m TeamMember) error
	SetTeamRepository(ctx context.Context, tx ports.Tx, workspaceID int64, r TeamRepository) error
}

// IssueWriter writes milestones, issues, their comments and their links.
type IssueWriter interface {
	UpsertMilestone(ctx context.Context, tx ports.Tx, workspaceID int64, m Milestone) error
	UpsertIssue(ctx context.Context, tx ports.Tx, workspaceID int64, i Issue) error
	UpsertIssueComment(ctx context.Context, tx ports.Tx, workspaceID int64, c IssueComment) error
	SetSubIssue(ctx context.Context, tx ports.Tx, workspaceID int64, l SubIssue) error
	SetIssueDependency(ctx context.Context, tx ports.Tx, workspaceID int64, l IssueDependency) error
}

// PullRequestWriter writes pull requests and their reviews, comments and threads.
type PullRequestWriter interface {
	// UpsertPullRequest writes pr and returns the pull request as the mirror holds it
	// afterwards (the stored, possibly newer, head when the payload lost to the version rule).
	UpsertPullRequest(ctx context.Context, tx ports.Tx, workspaceID int64, pr PullRequest) (PullRequestHead, error)
	UpsertReview(ctx context.Context, tx ports.Tx, workspaceID int64, r Review) error
	UpsertReviewComments(ctx context.Context, tx ports.Tx, workspaceID int64, cs []ReviewComment) error
	UpsertReviewThread(ctx context.Context, tx ports.Tx, workspaceID int64, t ReviewThread) error
}

// PullRequestReader reads the context that a retry needs after the event write's step was
// skipped. It reads committed data without a transaction of the handler and takes no lock.
type PullRequestReader interface {
	// PullRequestHead reads one mirrored pull request; false when it is not mirrored.
	PullRequestHead(ctx context.Context, workspaceID, pullRequestID int64) (PullRequestHead, bool, error)
	// PullRequestsWithHead lists the ids of the open mirrored pull requests of the repository
	// whose head is sha.
	PullRequestsWithHead(ctx context.Context, workspaceID, repositoryID int64, sha string) ([]int64, error)
}

// CheckWriter writes commit statuses, check suites and check runs, and refreshes the check
// state of pull requests from them.
type CheckWriter interface {
	UpsertCommitStatus(ctx context.Context, tx ports.Tx, workspaceID int64, s CommitStatus) error
	UpsertCheckSuite(ctx context.Context, tx ports.Tx, workspaceID int64, s CheckSuite) error
	UpsertCheckRuns(ctx context.Context, tx ports.Tx, workspaceID int64, runs []CheckRun) error
	// RefreshPullRequestChecks recomputes the check state of the pull request's mirrored head
	// from the mirrored check runs and statuses (nothing when the pull request is not
	// mirrored); eventID names the delivery that refreshed it.
	RefreshPullRequestChecks(ctx context.Context, tx ports.Tx, workspaceID, pullRequestID, eventID int64) error
}

// PushWriter writes what a push tells: where its ref points, and its commits.
type PushWriter interface {
	SetRef(ctx context.Context, tx ports.Tx, workspaceID int64, r Ref) error
	UpsertCommit(ctx context.Context, tx ports.Tx, workspaceID int64, c Commit) error
	// UpsertCommits upserts commits, as UpsertCommit does each, in one transaction and in the
	// order given; the change feed gets each changed commit's change in that order.
	UpsertCommits(ctx context.Context, tx ports.Tx, workspaceID int64, cs []Commit) error
}

// InstallationWriter is what the installation handlers write, all inside their step's
// transaction on the instance inbox (installation rows have no workspace).
type InstallationWriter interface {
	// LockAppConnection takes the lifecycle lock (FOR UPDATE) of the live (ACTIVE or
	// SUSPENDED) GitHub App connection whose source key is the installation id and reads it.
	// false: no live connection has the installation. An UNINSTALLED connection is never
	// answered: only the install flow or the instance administrator binds a workspace to an
	// installation again (CONTRACT.md "Install flows").
	LockAppConnection(ctx context.Context, tx ports.Tx, installationID int64) (AppConnection, bool, error)
	// SetAppConnectionState stores the state the domain decided for the locked connection.
	// Errors: ports.ErrConflict when another live connection already has the installation.
	SetAppConnectionState(ctx context.Context, tx ports.Tx, connectionID int64, s connection.State) error
	// RecordInstallation upserts the instance-wide installation record under the version
	// rule and reports whether it applied (false: the stored record is newer).
	RecordInstallation(ctx context.Context, tx ports.Tx, in Installation) (applied bool, err error)
	// RenameInstallationAccount changes the account login of a recorded installation under
	// the version rule (nothing when the installation was never recorded).
	RenameInstallationAccount(ctx context.Context, tx ports.Tx, installationID int64, login string, v Version) error
	// SetInstallationRepositories upserts covered (or, Deleted, uncovered) repositories of
	// the installation for one workspace.
	SetInstallationRepositories(ctx context.Context, tx ports.Tx, workspaceID int64, repos []InstallationRepository) error
	// RemoveInstallationRepositories marks every covered repository of the installation in
	// the workspace as uncovered (an uninstall), under the version rule.
	RemoveInstallationRepositories(ctx context.Context, tx ports.Tx, workspaceID, installationID int64, v Version) error
}

// Store is the whole mirror store the handlers write to.
type Store interface {
	UserWriter
	LabelWriter
	RepositoryWriter
	TeamWriter
	IssueWriter
	PullRequestWriter
	PullRequestReader
	CheckWriter
	PushWriter
	InstallationWriter
}

// ErrProviderNotFound is what a ProviderReader wraps when GitHub answers that the object does
// not exist (404, 410): a ref that a force push removed, a suite that is gone. The handlers
// treat it as "nothing to read", not as a failure.
var ErrProviderNotFound = errors.New("github object not found")

// ProviderReader reads GitHub through its REST API. Handlers call it only outside their write
// transactions, so no transaction waits for GitHub. Errors: *inbox.ProviderError: transport
// failures, server errors and rate limits retried with backoff (no earlier than GitHub asks,
// no budget); refusals and answers without the documented shape use the unknown-failure
// budget and are never permanent; ErrProviderNotFound around a 404 or 410.
type ProviderReader interface {
	// CompareCommits lists the commits reachable from head and not from base, oldest first
	// (repo is "owner/name").
	CompareCommits(ctx context.Context, acc Access, repo, base, head string) ([]Commit, error)
	// CheckRunsForRef lists the check runs of a commit SHA or ref.
	CheckRunsForRef(ctx context.Context, acc Access, repo, ref string) ([]CheckRun, error)
	// CheckRunsForSuite lists the check runs of a check suite.
	CheckRunsForSuite(ctx context.Context, acc Access, repo string, suiteID int64) ([]CheckRun, error)
}

// Access says whose credential a read uses: the dispatched row's workspace, the delivery's
// signed installation id (0: none) and the repository read. The reader picks that
// workspace's installation token or PAT from it (CONTRACT.md "Provider access").
type Access struct {
	WorkspaceID    int64
	InstallationID int64
	RepositoryID   int64
}

// InstallationStatus is what GitHub says of an installation now.
type InstallationStatus struct {
	// Exists is false when GitHub answers 404: the installation was deleted.
	Exists bool
	// Suspended is true when the installation has a suspended_at.
	Suspended bool
}

// InstallationVerifier reads an installation's current status as the App. Errors:
// *inbox.ProviderError (transport failures and rate limits retried without budget).
type InstallationVerifier interface {
	InstallationStatus(ctx context.Context, installationID int64) (InstallationStatus, error)
}
