// Package handlers mirrors subscribed GitLab events into the data of the workspace whose inbox
// row is dispatched. The handlers are adapters: they decode the stored payload, decide what to
// write and in which named step, and write only through the DeliveryInbox and the mirror store
// interfaces of this package, never through a database driver.
//
// Boundaries (the seed's "Handler boundaries" table, GitLab rows):
//
//   - Member, project event, note, milestone, subgroup and issue handlers use the default
//     boundary: ONE step with a fixed operation name ("gitlab.issue.upsert") claims their
//     writes. Admission verified the route and the provider data before the row was stored.
//     Project discovery (the project an event names, "gitlab.project.discover") and monitor
//     changes of project events ("gitlab.project.monitor") are separate atomic steps.
//   - Pipeline claims its event write in its own step ("gitlab.pipeline.upsert").
//   - Push claims webhook persistence ("push.persist"), then each commit in a step named by
//     project id and SHA ("push.commit/<project>/<sha>"). A failed commit rolls back its own
//     step only; the loop goes on with the other commits and the delivery then fails, so its
//     retry writes what is missing and skips the committed commits.
//   - Merge request claims the event write ("gitlab.merge_request.upsert") and the readiness
//     write ("gitlab.merge_request.readiness") as separate steps; the provider read
//     (approvals) runs between them, outside both transactions.
//
// Nothing here starts a goroutine or keeps the dispatch context: the dispatch identity ends
// when Handle returns.
package gitlabhandlers

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/handlerkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Deps are what the handlers need.
type Deps struct {
	// Inbox runs every database write in a fenced, named step.
	Inbox ports.DeliveryInbox
	// Store is the mirror store.
	Store gitlabmodel.Store
	// Reader reads GitLab's REST API (merge request approvals). nil: no provider reads are
	// configured and readiness is decided from what the payload carries.
	Reader gitlabmodel.ProviderReader
}

// Event types, as GitLab sends them in X-Gitlab-Event.
const (
	EventPush              = "Push Hook"
	EventMergeRequest      = "Merge Request Hook"
	EventNote              = "Note Hook"
	EventConfidentialNote  = "Confidential Note Hook"
	EventIssue             = "Issue Hook"
	EventConfidentialIssue = "Confidential Issue Hook"
	EventPipeline          = "Pipeline Hook"
	EventMember            = "Member Hook"
	EventSubgroup          = "Subgroup Hook"
	EventProject           = "Project Hook"
	EventMilestone         = "Milestone Hook"
)

// stepOperationCommit is the operation of a pushed commit's step.
const stepOperationCommit = "push.commit"

// Register wires every GitLab handler into reg. Errors: invalid deps, or the registry's refusal
// (a second handler for an event type).
func Register(reg contract.HandlerRegistrar, deps Deps) error {
	if err := handlerkit.Needs(gitlab.Provider, deps.Inbox, deps.Store); err != nil {
		return err
	}
	b := base{deps: deps}
	hs := map[string]ports.Handler{
		EventPush:              ports.HandlerFunc(b.push),
		EventMergeRequest:      ports.HandlerFunc(b.mergeRequest),
		EventNote:              ports.HandlerFunc(b.note),
		EventConfidentialNote:  ports.HandlerFunc(b.note),
		EventIssue:             ports.HandlerFunc(b.issue),
		EventConfidentialIssue: ports.HandlerFunc(b.issue),
		EventPipeline:          ports.HandlerFunc(b.pipeline),
		EventMember:            ports.HandlerFunc(b.member),
		EventSubgroup:          ports.HandlerFunc(b.subgroup),
		EventProject:           ports.HandlerFunc(b.project),
		EventMilestone:         ports.HandlerFunc(b.milestone),
	}
	return handlerkit.Register(reg, gitlab.Provider, EventTypes(), hs)
}

// EventTypes lists the event types Register wires, in a stable order.
func EventTypes() []string {
	return []string{
		EventPush, EventMergeRequest, EventNote, EventConfidentialNote, EventIssue, EventConfidentialIssue,
		EventPipeline, EventMember, EventSubgroup, EventProject, EventMilestone,
	}
}

// Fixed step names. They are stored in provider_event_step: keep them stable across releases
// while their events can still be in the inbox, or a retry would run a renamed step again.
var (
	StepProjectDiscover       = inbox.MustStep("gitlab.project.discover")
	StepProjectMonitor        = inbox.MustStep("gitlab.project.monitor")
	StepMember                = inbox.MustStep("gitlab.member.upsert")
	StepSubgroup              = inbox.MustStep("gitlab.subgroup.upsert")
	StepMilestone             = inbox.MustStep("gitlab.milestone.upsert")
	StepIssue                 = inbox.MustStep("gitlab.issue.upsert")
	StepNote                  = inbox.MustStep("gitlab.note.upsert")
	StepPipeline              = inbox.MustStep("gitlab.pipeline.upsert")
	StepMergeRequest          = inbox.MustStep("gitlab.merge_request.upsert")
	StepMergeRequestReadiness = inbox.MustStep("gitlab.merge_request.readiness")
	StepPushPersist           = inbox.MustStep("push.persist")
)

// CommitStep names the step of one pushed commit by its stable item ids, project id and SHA,
// never by its position in the payload (a retry may see the commits in another order).
func CommitStep(projectID int64, sha string) (inbox.Step, error) {
	return inbox.NewStep(stepOperationCommit, fmt.Sprint(projectID), sha)
}

// base holds the dependencies every handler method shares.
type base struct{ deps Deps }

// The handlers' failures name the provider (handlerkit.Kit).
var decode, malformed, wrap, workspace = kit.Decode, kit.Malformed, kit.Wrap, kit.Workspace

const kit = handlerkit.Kit("gitlab")

// step runs fn as the named step. A step that committed in an earlier attempt is skipped.
func (b base) step(ctx context.Context, s inbox.Step, fn func(ctx context.Context, tx ports.Tx) error) error {
	return handlerkit.Step(ctx, b.deps.Inbox, s, fn)
}

// discoverAndStep is the shape of a project's work event: discover its project, then run write
// as the event's one named step s. Failures are named by the event.
func (b base) discoverAndStep(ctx context.Context, event string, ws int64, env workEnvelope, eventID int64, s inbox.Step, write func(ctx context.Context, tx ports.Tx) error) error {
	if err := b.discover(ctx, ws, env, eventID); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, s, write))
}

// discover writes the project (and its namespace group, as far as the payload tells) that a
// work event names, in its own step: the project becomes listable even when the event's own
// write fails, and the event's step stays one fixed operation.
func (b base) discover(ctx context.Context, ws int64, env workEnvelope, eventID int64) error {
	p, ok := env.projectOf(eventID)
	if !ok {
		return nil
	}
	return b.step(ctx, StepProjectDiscover, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.UpsertProject(ctx, tx, ws, p)
	})
}
