// Package handlers mirrors subscribed GitHub events into the data of the workspace whose inbox
// row is dispatched. The handlers are adapters: they decode the stored payload, decide what to
// write and in which named step, and write only through the DeliveryInbox and the mirror store
// interfaces of this package, never through a database driver.
//
// Boundaries (the seed's "Handler boundaries" table):
//
//   - The default handlers (organization, repository, member, issues, issue comment, sub-issue,
//     issue dependency, review, review comment, milestone, label, membership, team, team_add)
//     claim ONE step with a fixed operation name ("issue.upsert") that holds all their writes.
//     The users and labels an event names are upserted before it, each batch in its own
//     transaction (DeliveryInbox.Write) on natural keys.
//   - pull_request, status and check_suite claim their event write in a short step, then
//     reconstruct the context later steps need when a retry finds that step committed
//     (DeliveryInbox.Completed and a read of the mirror), read check runs from GitHub outside
//     any transaction, write them in their own step and refresh each affected pull request's
//     check state in a step named by the pull request id.
//   - pull_request_review_thread claims its event write in its own step.
//   - push claims webhook persistence ("push.persist"), then each commit in a step named by
//     repository id and SHA, then its check-run writes in their own step.
//   - The installation handlers run on installation rows (no workspace) and create or repair
//     the App connection inside their step, under the connection row's lifecycle lock.
//
// Dispatch carries the workspace of the row; a related issue (sub-issue, dependency) in
// another repository is written only when that workspace also monitors the related repository.
// Nothing here starts a goroutine or keeps the dispatch context: the dispatch identity ends
// when Handle returns.
package githubhandlers

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/handlerkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Deps are what the handlers need.
type Deps struct {
	// Inbox runs every database write in a fenced, named step (or a fenced Write).
	Inbox ports.DeliveryInbox
	// Store is the mirror store.
	Store githubmodel.Store
	// Reader reads GitHub's REST API (check runs, commits a push payload left out). nil: no
	// provider reads are configured, and the handlers mirror what the payloads carry.
	Reader githubmodel.ProviderReader
	// Installations verifies an installation's status with the App (GET
	// /app/installations/{id} with the App JWT). nil: no App authentication is configured,
	// and the installation handler trusts the signed event's action.
	Installations githubmodel.InstallationVerifier
	// Log receives notes that are not failures (an installation with no connection to
	// repair, a transition the state machine refuses). nil: discarded. Never a payload.
	Log ports.Logger
}

// Event types, as GitHub names them in X-GitHub-Event.
const (
	EventOrganization             = "organization"
	EventRepository               = "repository"
	EventMember                   = "member"
	EventIssues                   = "issues"
	EventIssueComment             = "issue_comment"
	EventSubIssues                = "sub_issues"
	EventIssueDependencies        = "issue_dependencies"
	EventPullRequestReview        = "pull_request_review"
	EventPullRequestReviewComment = "pull_request_review_comment"
	EventPullRequestReviewThread  = "pull_request_review_thread"
	EventMilestone                = "milestone"
	EventLabel                    = "label"
	EventInstallation             = "installation"
	EventInstallationRepositories = "installation_repositories"
	EventInstallationTarget       = "installation_target"
	EventMembership               = "membership"
	EventTeamAdd                  = "team_add"
	EventTeam                     = "team"
	EventPullRequest              = "pull_request"
	EventStatus                   = "status"
	EventCheckSuite               = "check_suite"
	EventPush                     = "push"
)

// Register wires every GitHub handler into reg. Errors: invalid deps, or the registry's
// refusal (a second handler for an event type).
func Register(reg contract.HandlerRegistrar, deps Deps) error {
	if err := handlerkit.Needs(github.Provider, deps.Inbox, deps.Store); err != nil {
		return err
	}
	b := base{deps: deps}
	hs := map[string]ports.Handler{
		EventOrganization:             ports.HandlerFunc(b.organization),
		EventRepository:               ports.HandlerFunc(b.repository),
		EventMember:                   ports.HandlerFunc(b.member),
		EventIssues:                   ports.HandlerFunc(b.issues),
		EventIssueComment:             ports.HandlerFunc(b.issueComment),
		EventSubIssues:                ports.HandlerFunc(b.subIssues),
		EventIssueDependencies:        ports.HandlerFunc(b.issueDependencies),
		EventPullRequestReview:        ports.HandlerFunc(b.review),
		EventPullRequestReviewComment: ports.HandlerFunc(b.reviewComment),
		EventPullRequestReviewThread:  ports.HandlerFunc(b.reviewThread),
		EventMilestone:                ports.HandlerFunc(b.milestone),
		EventLabel:                    ports.HandlerFunc(b.label),
		EventInstallation:             ports.HandlerFunc(b.installation),
		EventInstallationRepositories: ports.HandlerFunc(b.installationRepositories),
		EventInstallationTarget:       ports.HandlerFunc(b.installationTarget),
		EventMembership:               ports.HandlerFunc(b.membership),
		EventTeamAdd:                  ports.HandlerFunc(b.teamAdd),
		EventTeam:                     ports.HandlerFunc(b.team),
		EventPullRequest:              ports.HandlerFunc(b.pullRequest),
		EventStatus:                   ports.HandlerFunc(b.status),
		EventCheckSuite:               ports.HandlerFunc(b.checkSuite),
		EventPush:                     ports.HandlerFunc(b.push),
	}
	return handlerkit.Register(reg, github.Provider, EventTypes(), hs)
}

// EventTypes lists the event types Register wires, in a stable order.
func EventTypes() []string {
	return []string{
		EventOrganization, EventRepository, EventMember, EventIssues, EventIssueComment, EventSubIssues,
		EventIssueDependencies, EventPullRequestReview, EventPullRequestReviewComment,
		EventPullRequestReviewThread, EventMilestone, EventLabel, EventInstallation,
		EventInstallationRepositories, EventInstallationTarget, EventMembership, EventTeamAdd, EventTeam,
		EventPullRequest, EventStatus, EventCheckSuite, EventPush,
	}
}

// base holds the dependencies every handler method shares.
type base struct{ deps Deps }

// Fixed step names of single-step events. They are stored in provider_event_step: keep them
// stable across releases while their events can still be in the inbox.
var (
	stepOrganization     = inbox.MustStep("organization.upsert")
	stepRepository       = inbox.MustStep("repository.upsert")
	stepMember           = inbox.MustStep("member.upsert")
	stepIssue            = inbox.MustStep("issue.upsert")
	stepIssueComment     = inbox.MustStep("issue_comment.upsert")
	stepSubIssue         = inbox.MustStep("sub_issue.upsert")
	stepIssueDependency  = inbox.MustStep("issue_dependency.upsert")
	stepReview           = inbox.MustStep("review.upsert")
	stepReviewComment    = inbox.MustStep("review_comment.upsert")
	stepReviewThread     = inbox.MustStep("review_thread.upsert")
	stepMilestone        = inbox.MustStep("milestone.upsert")
	stepLabel            = inbox.MustStep("label.upsert")
	stepMembership       = inbox.MustStep("membership.upsert")
	stepTeamAdd          = inbox.MustStep("team_repository.upsert")
	stepTeam             = inbox.MustStep("team.upsert")
	stepInstallation     = inbox.MustStep("installation.upsert")
	stepInstallationRepo = inbox.MustStep("installation_repositories.upsert")
	stepInstallationTgt  = inbox.MustStep("installation_target.upsert")
	stepPullRequest      = inbox.MustStep("pull_request.upsert")
	stepPullRequestRuns  = inbox.MustStep("pull_request.check_runs")
	stepStatus           = inbox.MustStep("status.upsert")
	stepStatusRuns       = inbox.MustStep("status.check_runs")
	stepCheckSuite       = inbox.MustStep("check_suite.upsert")
	stepCheckSuiteRuns   = inbox.MustStep("check_suite.check_runs")
	stepPushPersist      = inbox.MustStep("push.persist")
	stepPushRuns         = inbox.MustStep("push.check_runs")
)

// The handlers' failures name the provider (handlerkit.Kit).
var decode, malformed, wrap, workspace = kit.Decode, kit.Malformed, kit.Wrap, kit.Workspace

const kit = handlerkit.Kit("github")

// writeUsers upserts users in their own fenced transaction, apart from the handler's step. Users
// whose stored version is already equal or newer are left out, and when that is all of them
// no transaction is opened (a user row is shared by every delivery the person
// appears in, and a retry finds its own users stored).
func (b base) writeUsers(ctx context.Context, ws int64, us []githubmodel.User) error {
	us, err := b.deps.Store.UsersToWrite(ctx, ws, dedupeUsers(us))
	if err != nil || len(us) == 0 {
		return err
	}
	return b.deps.Inbox.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertUsers(ctx, tx, ws, us)
	})
}

// writeLabels upserts labels in their own fenced transaction, apart from the handler's step,
// leaving out, as writeUsers does, the labels stored at an equal or newer version (a label row
// is shared by every issue and pull request that carries it).
func (b base) writeLabels(ctx context.Context, ws int64, ls []githubmodel.Label) error {
	ls, err := b.deps.Store.LabelsToWrite(ctx, ws, dedupeLabels(ls))
	if err != nil || len(ls) == 0 {
		return err
	}
	return b.deps.Inbox.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertLabels(ctx, tx, ws, ls)
	})
}

// step runs fn as the named step. A step that committed in an earlier attempt is skipped.
func (b base) step(ctx context.Context, s inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	return handlerkit.Step(ctx, b.deps.Inbox, s, fn)
}

// upsertRepositoryAndOrganization writes the event's repository and, when the event names
// one, its organization: the shared first writes of the repository events' steps.
func (b base) upsertRepositoryAndOrganization(ctx context.Context, tx ports.Tx, ws int64, repo githubmodel.Repository, org *githubmodel.Organization) error {
	if org != nil {
		if err := b.deps.Store.UpsertOrganization(ctx, tx, ws, *org); err != nil {
			return err
		}
	}
	return b.deps.Store.UpsertRepository(ctx, tx, ws, repo)
}

// note logs a handled outcome that is worth knowing but is no failure.
func (b base) note(msg string, kv ...any) {
	if b.deps.Log != nil {
		b.deps.Log.Infow(msg, kv...)
	}
}

// orgOf converts the event's organization, or nil.
func orgOf(o *ghOrganization, eventID int64) *githubmodel.Organization {
	if org, ok := toOrganization(o, eventID); ok {
		return &org
	}
	return nil
}

// dedupeUsers keeps the last of each user id: one upsert statement must not name a row twice
// (ON CONFLICT cannot affect a row a second time in the same command).
func dedupeUsers(us []githubmodel.User) []githubmodel.User {
	return dedupeBy(us, func(u githubmodel.User) int64 { return u.ID })
}

// dedupeLabels keeps the last of each label id, for the same reason.
func dedupeLabels(ls []githubmodel.Label) []githubmodel.Label {
	return dedupeBy(ls, func(l githubmodel.Label) int64 { return l.ID })
}

func dedupeBy[T any](xs []T, key func(T) int64) []T {
	at := map[int64]int{}
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if i, ok := at[key(x)]; ok {
			out[i] = x
			continue
		}
		at[key(x)] = len(out)
		out = append(out, x)
	}
	return out
}
