package gitlabhandlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// push mirrors a push: webhook persistence (the project and the push itself) in the step
// "push.persist", then the commits, each under its own step named by project id and SHA.
//
// The commits' steps are claimed together and written in one fenced transaction (a retry's
// claim skips the commits that committed). When that transaction fails for any reason but a
// fence rejection, nothing of it committed, and each commit is written again in its own step:
// a commit whose step fails rolls back that step only, the loop goes on with the other
// commits, so one bad commit does not hold back the rest, and then the delivery fails with the
// first failure: the retry skips the committed commits and writes the missing ones. A fence
// rejection (lease lost, event erased, row busy) ends the push at once, since no later step
// could commit under this lease either.
func (b base) push(ctx context.Context, d ports.Dispatch) error {
	const event = "push"
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		workEnvelope
		Before  string `json:"before"`
		After   string `json:"after"`
		Ref     string `json:"ref"`
		UserID  glID   `json:"user_id"`
		Total   int    `json:"total_commits_count"`
		Commits []struct {
			ID        string `json:"id"`
			Title     string `json:"title"`
			Message   string `json:"message"`
			Timestamp glTime `json:"timestamp"`
			URL       string `json:"url"`
			Author    struct {
				Name  string `json:"name"`
				Email string `json:"email"`
			} `json:"author"`
		} `json:"commits"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	projectID := p.projectID()
	if projectID <= 0 || p.Ref == "" || p.After == "" {
		return malformed(event, "a push needs a project id, a ref and an after SHA")
	}
	eventID := d.Delivery.ID()

	type commitStep struct {
		step   inbox.Step
		commit gitlabmodel.Commit
	}
	var commits []commitStep
	seen := map[string]bool{}
	for _, c := range p.Commits {
		sha := strings.ToLower(c.ID)
		if seen[sha] {
			continue // one step per commit, even when a payload names a commit twice
		}
		seen[sha] = true
		step, err := CommitStep(projectID, sha)
		if err != nil {
			return inbox.ParsingFailure(fmt.Errorf("gitlab push payload: commit id: %w", err))
		}
		title := c.Title
		if title == "" {
			title, _, _ = strings.Cut(c.Message, "\n")
		}
		commits = append(commits, commitStep{step: step, commit: gitlabmodel.Commit{
			ProjectID: projectID, SHA: sha, Title: title, Message: c.Message, AuthorName: c.Author.Name,
			AuthorEmail: c.Author.Email, AuthoredAt: c.Timestamp.ptr(), URL: c.URL, EventID: eventID,
		}})
	}
	total := p.Total
	if total < len(commits) {
		total = len(commits)
	}
	pushed := gitlabmodel.Push{
		ProjectID: projectID, Ref: p.Ref, BeforeSHA: p.Before, AfterSHA: p.After, UserID: p.UserID.ptr(),
		CommitCount: total, EventID: eventID,
	}
	project, hasProject := p.projectOf(eventID)
	err = b.step(ctx, StepPushPersist, func(ctx context.Context, tx ports.Tx) error {
		if hasProject {
			if err := b.deps.Store.UpsertProject(ctx, tx, ws, project); err != nil {
				return err
			}
		}
		return b.deps.Store.RecordPush(ctx, tx, ws, pushed)
	})
	if err != nil {
		return wrap(event, err)
	}

	if len(commits) > 1 {
		steps := make([]inbox.Step, len(commits))
		for i, cs := range commits {
			steps[i] = cs.step
		}
		_, err := b.deps.Inbox.Steps(ctx, steps, func(ctx context.Context, tx ports.Tx, claimed []bool) error {
			batch := make([]gitlabmodel.Commit, 0, len(commits))
			for i, cs := range commits {
				if claimed[i] {
					batch = append(batch, cs.commit)
				}
			}
			return b.deps.Store.InsertCommits(ctx, tx, ws, batch)
		})
		if err == nil || inbox.IsFenceRejection(err) {
			return wrap(event, err)
		}
	}
	var (
		first  error
		failed int
	)
	for _, cs := range commits {
		c := cs.commit
		err := b.step(ctx, cs.step, func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.InsertCommit(ctx, tx, ws, c)
		})
		if err == nil {
			continue
		}
		if inbox.IsFenceRejection(err) {
			return wrap(event, err)
		}
		failed++
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return wrap(event, fmt.Errorf("%d of %d commits not written, the retry writes them: %w", failed, len(commits), first))
	}
	return nil
}
