package githubhandlers

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// pullRequest mirrors a pull request event in the orchestration boundary of the seed:
//
//  1. users and labels commit on natural keys;
//  2. the event write ("pull_request.upsert": repository, milestone, pull request) claims its
//     own short step, which returns the pull request as stored;
//  3. when a retry finds that step committed, the context it returned is reconstructed by a
//     read of the mirror (the stored head, which can be newer than this payload);
//  4. the head's check runs are read from GitHub outside any transaction and written in their
//     own step ("pull_request.check_runs");
//  5. the pull request's check state is refreshed in a step named by its id.
func (b base) pullRequest(ctx context.Context, d ports.Dispatch) error {
	const event = EventPullRequest
	var p struct {
		envelope
		PullRequest *ghPullRequest `json:"pull_request"`
		Label       *ghLabel       `json:"label"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	pr, err := toPullRequest(event, p.PullRequest, repo.ID, eventID)
	if err != nil {
		return err
	}
	labels := p.PullRequest.Labels
	if p.Label != nil {
		labels = append(labels, *p.Label)
	}
	if err := b.writeUsers(ctx, ws, pullRequestUsers(p.PullRequest, eventID)); err != nil {
		return wrap(event, err)
	}
	if err := b.writeLabels(ctx, ws, toLabels(labels, repo.ID, eventID)); err != nil {
		return wrap(event, err)
	}
	milestone, hasMilestone := toMilestone(p.PullRequest.Milestone, repo.ID, eventID)

	head, err := b.eventWrite(ctx, ws, stepPullRequest, pr, func(ctx context.Context, tx ports.Tx) (githubmodel.PullRequestHead, error) {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return githubmodel.PullRequestHead{}, err
		}
		if hasMilestone {
			if err := b.deps.Store.UpsertMilestone(ctx, tx, ws, milestone); err != nil {
				return githubmodel.PullRequestHead{}, err
			}
		}
		return b.deps.Store.UpsertPullRequest(ctx, tx, ws, pr)
	})
	if err != nil {
		return wrap(event, err)
	}
	if head.HeadSHA != "" {
		err := b.checkRuns(ctx, d, ws, repo.ID, stepPullRequestRuns, func(ctx context.Context) ([]githubmodel.CheckRun, error) {
			return b.deps.Reader.CheckRunsForRef(ctx, p.access(ws, repo.ID), repo.FullName, head.HeadSHA)
		})
		if err != nil {
			return wrap(event, err)
		}
	}
	return wrap(event, b.refreshPullRequests(ctx, d, ws, []int64{head.ID}))
}

// eventWrite claims the event write of a pull request in its own step and returns the
// processing context the later steps need. When an earlier attempt committed the step, the
// step is not run again: the context is reconstructed by reading the mirror.
func (b base) eventWrite(ctx context.Context, ws int64, step inbox.Step, pr githubmodel.PullRequest,
	write func(ctx context.Context, tx ports.Tx) (githubmodel.PullRequestHead, error),
) (githubmodel.PullRequestHead, error) {
	done, err := b.deps.Inbox.Completed(ctx, step)
	if err != nil {
		return githubmodel.PullRequestHead{}, err
	}
	if !done {
		var head githubmodel.PullRequestHead
		ran, err := b.deps.Inbox.Step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
			var err error
			head, err = write(ctx, tx)
			return err
		})
		if err != nil {
			return githubmodel.PullRequestHead{}, err
		}
		if ran {
			return head, nil
		}
		// Another attempt committed the step meanwhile: read what it left, like a retry.
	}
	head, found, err := b.deps.Store.PullRequestHead(ctx, ws, pr.ID)
	if err != nil {
		return githubmodel.PullRequestHead{}, err
	}
	if !found {
		// The committed write did not keep the pull request (a tombstone or a newer, deleted
		// state): refresh against what this delivery said.
		return githubmodel.PullRequestHead{ID: pr.ID, RepositoryID: pr.RepositoryID, HeadSHA: pr.HeadSHA, State: pr.State}, nil
	}
	return head, nil
}

// checkRuns reads check runs from GitHub, outside any write transaction, and writes them in
// their own step. A retry that finds the step committed reads nothing again. Without a
// configured reader there is nothing to read. A ref or suite that GitHub no longer knows has
// no check runs.
func (b base) checkRuns(ctx context.Context, d ports.Dispatch, ws, repositoryID int64, step inbox.Step,
	read func(ctx context.Context) ([]githubmodel.CheckRun, error),
) error {
	if b.deps.Reader == nil {
		return nil
	}
	done, err := b.deps.Inbox.Completed(ctx, step)
	if err != nil || done {
		return err
	}
	runs, err := read(ctx)
	if errors.Is(err, githubmodel.ErrProviderNotFound) {
		runs = nil
	} else if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	for i := range runs {
		runs[i].RepositoryID = repositoryID
		v := githubmodel.Version{EventID: eventID}
		switch {
		case runs[i].CompletedAt != nil:
			v.UpdatedAt = *runs[i].CompletedAt
		case runs[i].StartedAt != nil:
			v.UpdatedAt = *runs[i].StartedAt
		}
		runs[i].Version = v
	}
	return b.step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
		if len(runs) == 0 {
			return nil
		}
		return b.deps.Store.UpsertCheckRuns(ctx, tx, ws, runs)
	})
}

// refreshPullRequests recomputes each pull request's check state in a step named by the pull
// request id ("pull_request.refresh/<id>"), in id order, each once per delivery.
func (b base) refreshPullRequests(ctx context.Context, d ports.Dispatch, ws int64, ids []int64) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		if id <= 0 {
			continue
		}
		step, err := inbox.NewStep("pull_request.refresh", strconv.FormatInt(id, 10))
		if err != nil {
			return err
		}
		err = b.step(ctx, step, func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.RefreshPullRequestChecks(ctx, tx, ws, id, d.Delivery.ID())
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// review mirrors a pull request review submitted, edited or dismissed. One step,
// "review.upsert": repository, pull request and review.
func (b base) review(ctx context.Context, d ports.Dispatch) error {
	const event = EventPullRequestReview
	var p struct {
		envelope
		PullRequest *ghPullRequest `json:"pull_request"`
		Review      *ghReview      `json:"review"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	pr, err := toPullRequest(event, p.PullRequest, repo.ID, eventID)
	if err != nil {
		return err
	}
	if p.Review == nil || p.Review.ID <= 0 {
		return malformed(event, "review needs an id")
	}
	r := p.Review
	review := githubmodel.Review{
		ID: r.ID, RepositoryID: repo.ID, PullRequestID: pr.ID, AuthorID: userID(r.User), State: r.State,
		Body: r.Body, CommitID: r.CommitID, SubmittedAt: r.SubmittedAt.ptr(), Version: versionOf(r.SubmittedAt, eventID),
	}
	if err := b.writeUsers(ctx, ws, append(pullRequestUsers(p.PullRequest, eventID), users(eventID, r.User)...)); err != nil {
		return wrap(event, err)
	}
	if err := b.writeLabels(ctx, ws, toLabels(p.PullRequest.Labels, repo.ID, eventID)); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, stepReview, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		if _, err := b.deps.Store.UpsertPullRequest(ctx, tx, ws, pr); err != nil {
			return err
		}
		return b.deps.Store.UpsertReview(ctx, tx, ws, review)
	}))
}

// reviewComment mirrors a review comment created, edited or deleted (a tombstone). One step,
// "review_comment.upsert".
func (b base) reviewComment(ctx context.Context, d ports.Dispatch) error {
	const event = EventPullRequestReviewComment
	var p struct {
		envelope
		PullRequest *ghPullRequest   `json:"pull_request"`
		Comment     *ghReviewComment `json:"comment"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	pr, err := toPullRequest(event, p.PullRequest, repo.ID, eventID)
	if err != nil {
		return err
	}
	if p.Comment == nil || p.Comment.ID <= 0 {
		return malformed(event, "comment needs an id")
	}
	c := toReviewComment(*p.Comment, repo.ID, pr.ID, eventID)
	c.Deleted = p.Action == "deleted"
	if err := b.writeUsers(ctx, ws, append(pullRequestUsers(p.PullRequest, eventID), users(eventID, p.Comment.User)...)); err != nil {
		return wrap(event, err)
	}
	if err := b.writeLabels(ctx, ws, toLabels(p.PullRequest.Labels, repo.ID, eventID)); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, stepReviewComment, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		if _, err := b.deps.Store.UpsertPullRequest(ctx, tx, ws, pr); err != nil {
			return err
		}
		return b.deps.Store.UpsertReviewComments(ctx, tx, ws, []githubmodel.ReviewComment{c})
	}))
}

// reviewThread mirrors a review thread resolved or unresolved. It claims its event write in
// its own step, "review_thread.upsert": repository, pull request, the thread's comments and
// the thread.
func (b base) reviewThread(ctx context.Context, d ports.Dispatch) error {
	const event = EventPullRequestReviewThread
	var p struct {
		envelope
		PullRequest *ghPullRequest `json:"pull_request"`
		Thread      *struct {
			NodeID   string            `json:"node_id"`
			Comments []ghReviewComment `json:"comments"`
		} `json:"thread"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	pr, err := toPullRequest(event, p.PullRequest, repo.ID, eventID)
	if err != nil {
		return err
	}
	if p.Thread == nil || p.Thread.NodeID == "" {
		return malformed(event, "thread needs a node id")
	}
	thread := githubmodel.ReviewThread{
		NodeID: p.Thread.NodeID, RepositoryID: repo.ID, PullRequestID: pr.ID, Resolved: p.Action == "resolved",
		Version: versionOf(ghTime{}, eventID),
	}
	comments := make([]githubmodel.ReviewComment, 0, len(p.Thread.Comments))
	authors := pullRequestUsers(p.PullRequest, eventID)
	for _, c := range p.Thread.Comments {
		if c.ID <= 0 {
			continue
		}
		comments = append(comments, toReviewComment(c, repo.ID, pr.ID, eventID))
		thread.CommentIDs = append(thread.CommentIDs, c.ID)
		if thread.Path == "" {
			thread.Path = c.Path
		}
		authors = append(authors, users(eventID, c.User)...)
	}
	if err := b.writeUsers(ctx, ws, authors); err != nil {
		return wrap(event, err)
	}
	if err := b.writeLabels(ctx, ws, toLabels(p.PullRequest.Labels, repo.ID, eventID)); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.step(ctx, stepReviewThread, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		if _, err := b.deps.Store.UpsertPullRequest(ctx, tx, ws, pr); err != nil {
			return err
		}
		if len(comments) > 0 {
			if err := b.deps.Store.UpsertReviewComments(ctx, tx, ws, comments); err != nil {
				return err
			}
		}
		return b.deps.Store.UpsertReviewThread(ctx, tx, ws, thread)
	}))
}
