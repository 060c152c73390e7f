package githubhandlers

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// issues mirrors an issue event. Its users and labels commit first, each batch on natural
// keys; then one step, "issue.upsert", writes the repository, the milestone and the issue. A
// deleted or transferred issue becomes a tombstone in this repository (a transferred issue
// arrives as a new issue of its new repository).
func (b base) issues(ctx context.Context, d ports.Dispatch) error {
	const event = EventIssues
	var p struct {
		envelope
		Issue *ghIssue `json:"issue"`
		Label *ghLabel `json:"label"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	issue, err := toIssue(event, p.Issue, repo.ID, eventID)
	if err != nil {
		return err
	}
	issue.Deleted = p.Action == "deleted" || p.Action == "transferred"
	labels := p.Issue.Labels
	if p.Label != nil {
		labels = append(labels, *p.Label)
	}
	if err := b.writeUsers(ctx, ws, issueUsers(p.Issue, eventID)); err != nil {
		return wrap(event, err)
	}
	if err := b.writeLabels(ctx, ws, toLabels(labels, repo.ID, eventID)); err != nil {
		return wrap(event, err)
	}
	milestone, hasMilestone := toMilestone(p.Issue.Milestone, repo.ID, eventID)
	return wrap(event, b.step(ctx, stepIssue, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		if hasMilestone {
			if err := b.deps.Store.UpsertMilestone(ctx, tx, ws, milestone); err != nil {
				return err
			}
		}
		return b.deps.Store.UpsertIssue(ctx, tx, ws, issue)
	}))
}

// issueComment mirrors a comment created, edited or deleted on an issue or on a pull
// request's conversation. One step, "issue_comment.upsert"; the issue itself is written only
// when it is not a pull request's issue side (pull requests are mirrored by their own events).
func (b base) issueComment(ctx context.Context, d ports.Dispatch) error {
	const event = EventIssueComment
	var p struct {
		envelope
		Issue   *ghIssue   `json:"issue"`
		Comment *ghComment `json:"comment"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	issue, err := toIssue(event, p.Issue, repo.ID, eventID)
	if err != nil {
		return err
	}
	if p.Comment == nil || p.Comment.ID <= 0 {
		return malformed(event, "comment needs an id")
	}
	c := p.Comment
	comment := githubmodel.IssueComment{
		ID: c.ID, RepositoryID: repo.ID, IssueID: issue.ID, AuthorID: userID(c.User), Body: c.Body,
		HTMLURL: c.HTMLURL, CreatedAt: c.CreatedAt.ptr(), Deleted: p.Action == "deleted",
		Version: versionOf(c.UpdatedAt.or(c.CreatedAt), eventID),
	}
	mirrorIssue := !p.Issue.isPullRequest()
	us := []githubmodel.User{}
	if mirrorIssue {
		us = issueUsers(p.Issue, eventID)
		if err := b.writeLabels(ctx, ws, toLabels(p.Issue.Labels, repo.ID, eventID)); err != nil {
			return wrap(event, err)
		}
	}
	if u, ok := toUser(c.User, eventID); ok {
		us = append(us, u)
	}
	if err := b.writeUsers(ctx, ws, us); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, stepIssueComment, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		if mirrorIssue {
			if err := b.deps.Store.UpsertIssue(ctx, tx, ws, issue); err != nil {
				return err
			}
		}
		return b.deps.Store.UpsertIssueComment(ctx, tx, ws, comment)
	}))
}

// subIssues mirrors a sub-issue added or removed, seen from the parent (sub_issue_*: the
// event's repository holds the parent) or from the child (parent_issue_*: it holds the
// sub-issue). One step, "sub_issue.upsert".
func (b base) subIssues(ctx context.Context, d ports.Dispatch) error {
	const event = EventSubIssues
	var p struct {
		envelope
		SubIssue        *ghIssue      `json:"sub_issue"`
		SubIssueRepo    *ghRepository `json:"sub_issue_repo"`
		ParentIssue     *ghIssue      `json:"parent_issue"`
		ParentIssueRepo *ghRepository `json:"parent_issue_repo"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	var (
		main, related *ghIssue
		relatedRepo   *ghRepository
		mainIsParent  bool
	)
	switch p.Action {
	case "sub_issue_added", "sub_issue_removed":
		main, related, relatedRepo, mainIsParent = p.ParentIssue, p.SubIssue, p.SubIssueRepo, true
	case "parent_issue_added", "parent_issue_removed":
		main, related, relatedRepo = p.SubIssue, p.ParentIssue, p.ParentIssueRepo
	default:
		return malformed(event, "unknown action %q", p.Action)
	}
	removed := p.Action == "sub_issue_removed" || p.Action == "parent_issue_removed"
	return b.linkedIssues(ctx, d, event, stepSubIssue, p.envelope, main, related, relatedRepo,
		func(ctx context.Context, tx ports.Tx, ws, mainID, relatedID int64) error {
			l := githubmodel.SubIssue{ParentIssueID: relatedID, SubIssueID: mainID, Deleted: removed, Version: versionOf(ghTime{}, eventID)}
			if mainIsParent {
				l.ParentIssueID, l.SubIssueID = mainID, relatedID
			}
			return b.deps.Store.SetSubIssue(ctx, tx, ws, l)
		})
}

// issueDependencies mirrors an issue dependency added or removed, seen from the blocked issue
// (blocked_by_*: the event's repository holds the blocked issue) or from the blocking one
// (blocking_*). One step, "issue_dependency.upsert".
func (b base) issueDependencies(ctx context.Context, d ports.Dispatch) error {
	const event = EventIssueDependencies
	var p struct {
		envelope
		BlockedIssue      *ghIssue      `json:"blocked_issue"`
		BlockedIssueRepo  *ghRepository `json:"blocked_issue_repo"`
		BlockingIssue     *ghIssue      `json:"blocking_issue"`
		BlockingIssueRepo *ghRepository `json:"blocking_issue_repo"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	var (
		main, related *ghIssue
		relatedRepo   *ghRepository
		mainIsBlocked bool
	)
	switch p.Action {
	case "blocked_by_added", "blocked_by_removed":
		main, related, relatedRepo, mainIsBlocked = p.BlockedIssue, p.BlockingIssue, p.BlockingIssueRepo, true
	case "blocking_added", "blocking_removed":
		main, related, relatedRepo = p.BlockingIssue, p.BlockedIssue, p.BlockedIssueRepo
	default:
		return malformed(event, "unknown action %q", p.Action)
	}
	removed := p.Action == "blocked_by_removed" || p.Action == "blocking_removed"
	return b.linkedIssues(ctx, d, event, stepIssueDependency, p.envelope, main, related, relatedRepo,
		func(ctx context.Context, tx ports.Tx, ws, mainID, relatedID int64) error {
			l := githubmodel.IssueDependency{BlockedIssueID: relatedID, BlockingIssueID: mainID, Deleted: removed, Version: versionOf(ghTime{}, eventID)}
			if mainIsBlocked {
				l.BlockedIssueID, l.BlockingIssueID = mainID, relatedID
			}
			return b.deps.Store.SetIssueDependency(ctx, tx, ws, l)
		})
}

// linkedIssues writes the event's issue, and the related issue with the link only when the
// workspace also monitors the related issue's repository (or it is the event's repository).
// The dispatch carries the workspace of the row, which proves only that the workspace
// monitors the event's repository; a related issue elsewhere would otherwise leak another
// repository's data into the workspace. Without a related repository in the payload the
// related repository is unknown, and so not monitored.
func (b base) linkedIssues(ctx context.Context, d ports.Dispatch, event string, step inbox.Step, env envelope,
	main, related *ghIssue, relatedRepo *ghRepository,
	link func(ctx context.Context, tx ports.Tx, ws, mainID, relatedID int64) error,
) error {
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	repo, err := toRepository(event, env.Repository, eventID)
	if err != nil {
		return err
	}
	mainIssue, err := toIssue(event, main, repo.ID, eventID)
	if err != nil {
		return err
	}
	if related == nil {
		return malformed(event, "the related issue is missing")
	}
	var (
		otherRepo    githubmodel.Repository
		relatedKnown bool
		sameRepo     bool
	)
	if relatedRepo != nil {
		if otherRepo, err = toRepository(event, relatedRepo, eventID); err != nil {
			return err
		}
		relatedKnown, sameRepo = true, otherRepo.ID == repo.ID
	}
	relatedIssue, err := toIssue(event, related, otherRepo.ID, eventID)
	if err != nil {
		return err
	}
	if relatedKnown && sameRepo {
		relatedIssue.RepositoryID = repo.ID
	}
	// monitored decides in the transaction that writes on it, so the decision and the writes
	// see the same subscriptions.
	monitored := func(ctx context.Context, tx ports.Tx) (bool, error) {
		switch {
		case !relatedKnown:
			return false, nil
		case sameRepo:
			return true, nil
		}
		return b.deps.Store.Monitors(ctx, tx, ws, otherRepo.ID, otherRepo.OwnerID)
	}

	if err := b.writeUsers(ctx, ws, issueUsers(main, eventID)); err != nil {
		return wrap(event, err)
	}
	if err := b.writeLabels(ctx, ws, toLabels(main.Labels, repo.ID, eventID)); err != nil {
		return wrap(event, err)
	}
	// The related issue's users and labels commit on their own too, and only for a monitored
	// repository: nothing of an unmonitored repository enters the workspace.
	relatedUsers, relatedLabels := issueUsers(related, eventID), toLabels(related.Labels, relatedIssue.RepositoryID, eventID)
	if len(relatedUsers) > 0 || len(relatedLabels) > 0 {
		err := b.deps.Inbox.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
			ok, err := monitored(ctx, tx)
			if err != nil || !ok {
				return err
			}
			if err := b.deps.Store.UpsertUsers(ctx, tx, ws, relatedUsers); err != nil {
				return err
			}
			return b.deps.Store.UpsertLabels(ctx, tx, ws, relatedLabels)
		})
		if err != nil {
			return wrap(event, err)
		}
	}

	var skipped bool
	err = b.step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
		skipped = false
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(env.Organization, eventID)); err != nil {
			return err
		}
		if err := b.deps.Store.UpsertIssue(ctx, tx, ws, mainIssue); err != nil {
			return err
		}
		ok, err := monitored(ctx, tx)
		if err != nil {
			return err
		}
		if !ok {
			skipped = true
			return nil
		}
		if !sameRepo {
			if err := b.deps.Store.UpsertRepository(ctx, tx, ws, otherRepo); err != nil {
				return err
			}
		}
		if err := b.deps.Store.UpsertIssue(ctx, tx, ws, relatedIssue); err != nil {
			return err
		}
		return link(ctx, tx, ws, mainIssue.ID, relatedIssue.ID)
	})
	if err == nil && skipped {
		b.note("github related issue not mirrored: the workspace does not monitor its repository",
			"event", event, "eventId", eventID, "workspaceId", ws)
	}
	return wrap(event, err)
}

// milestone mirrors a milestone created, edited, opened, closed or deleted (a tombstone).
// One step, "milestone.upsert"; its creator first.
func (b base) milestone(ctx context.Context, d ports.Dispatch) error {
	const event = EventMilestone
	var p struct {
		envelope
		Milestone *ghMilestone `json:"milestone"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	m, ok := toMilestone(p.Milestone, repo.ID, eventID)
	if !ok {
		return malformed(event, "milestone needs an id")
	}
	m.Deleted = p.Action == "deleted"
	if err := b.writeUsers(ctx, ws, users(eventID, p.Milestone.Creator)); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, stepMilestone, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		return b.deps.Store.UpsertMilestone(ctx, tx, ws, m)
	}))
}

// label mirrors a label created, edited or deleted (a tombstone). The label itself commits on
// its natural key like every label upsert; the step "label.upsert" writes its repository.
func (b base) label(ctx context.Context, d ports.Dispatch) error {
	const event = EventLabel
	var p struct {
		envelope
		Label *ghLabel `json:"label"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	if p.Label == nil || p.Label.ID <= 0 {
		return malformed(event, "label needs an id")
	}
	ls := toLabels([]ghLabel{*p.Label}, repo.ID, eventID)
	ls[0].Deleted = p.Action == "deleted"
	if err := b.writeLabels(ctx, ws, ls); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, stepLabel, func(ctx context.Context, tx ports.Tx) error {
		return b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID))
	}))
}
