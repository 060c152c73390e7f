package githubhandlers

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Backfill pages (adapters/github/githubsync) are mapped here, with the same conversions the
// handlers use for webhook payloads (GitHub's REST objects are the payloads' objects), and
// written through the same Store methods, so the version rule decides between a page and a
// webhook exactly as between two webhooks. A page has no inbox event: its writes carry event
// id 0, so a webhook with the same provider timestamp wins over the page and a newer
// timestamp wins whichever wrote it ("calls from a sync job have no event", the seed).

// BackfillWriter is what a backfill page writes through: the handlers' own Store methods.
type BackfillWriter interface {
	githubmodel.UserWriter
	githubmodel.LabelWriter
	UpsertOrganization(ctx context.Context, tx ports.Tx, workspaceID int64, o githubmodel.Organization) error
	UpsertRepository(ctx context.Context, tx ports.Tx, workspaceID int64, r githubmodel.Repository) error
	UpsertMilestone(ctx context.Context, tx ports.Tx, workspaceID int64, m githubmodel.Milestone) error
	UpsertIssue(ctx context.Context, tx ports.Tx, workspaceID int64, i githubmodel.Issue) error
	UpsertPullRequest(ctx context.Context, tx ports.Tx, workspaceID int64, pr githubmodel.PullRequest) (githubmodel.PullRequestHead, error)
}

// BackfillPage is one page of a repository's history as mirror writes.
type BackfillPage struct {
	Repository   *githubmodel.Repository
	Users        []githubmodel.User
	Labels       []githubmodel.Label
	Milestones   []githubmodel.Milestone
	Issues       []githubmodel.Issue
	PullRequests []githubmodel.PullRequest
	// Items is how many listed objects the page carried (the progress count): the
	// repository, or the issues, pull requests, labels or milestones of the list read.
	Items int
}

// backfillEvent names a page in parsing failures.
const backfillEvent = "backfill"

// DecodeBackfillRepository maps GET /repos/{owner}/{repo}. Errors: a parsing failure.
func DecodeBackfillRepository(body []byte) (BackfillPage, error) {
	var r ghRepository
	if err := decode(backfillEvent, body, &r); err != nil {
		return BackfillPage{}, err
	}
	repo, err := toRepository(backfillEvent, &r, 0)
	if err != nil {
		return BackfillPage{}, err
	}
	return BackfillPage{Repository: &repo, Items: 1}, nil
}

// DecodeBackfillIssues maps a page of GET /repos/{o}/{r}/issues, skipping the entries that are
// pull requests' issue sides (pull requests are read from their own list).
func DecodeBackfillIssues(body []byte, repositoryID int64) (BackfillPage, error) {
	var list []ghIssue
	if err := decodeList(body, &list); err != nil {
		return BackfillPage{}, err
	}
	var p BackfillPage
	for i := range list {
		in := &list[i]
		if in.isPullRequest() {
			continue
		}
		issue, err := toIssue(backfillEvent, in, repositoryID, 0)
		if err != nil {
			return BackfillPage{}, err
		}
		p.Issues = append(p.Issues, issue)
		p.Users = append(p.Users, issueUsers(in, 0)...)
		p.Labels = append(p.Labels, toLabels(in.Labels, repositoryID, 0)...)
		if m, ok := toMilestone(in.Milestone, repositoryID, 0); ok {
			p.Milestones = append(p.Milestones, m)
		}
	}
	p.Items = len(p.Issues)
	return p, nil
}

// DecodeBackfillPullRequests maps a page of GET /repos/{o}/{r}/pulls.
func DecodeBackfillPullRequests(body []byte, repositoryID int64) (BackfillPage, error) {
	var list []ghPullRequest
	if err := decodeList(body, &list); err != nil {
		return BackfillPage{}, err
	}
	var p BackfillPage
	for i := range list {
		in := &list[i]
		pr, err := toPullRequest(backfillEvent, in, repositoryID, 0)
		if err != nil {
			return BackfillPage{}, err
		}
		p.PullRequests = append(p.PullRequests, pr)
		p.Users = append(p.Users, pullRequestUsers(in, 0)...)
		p.Labels = append(p.Labels, toLabels(in.Labels, repositoryID, 0)...)
		if m, ok := toMilestone(in.Milestone, repositoryID, 0); ok {
			p.Milestones = append(p.Milestones, m)
		}
	}
	p.Items = len(p.PullRequests)
	return p, nil
}

// DecodeBackfillLabels maps a page of GET /repos/{o}/{r}/labels.
func DecodeBackfillLabels(body []byte, repositoryID int64) (BackfillPage, error) {
	var list []ghLabel
	if err := decodeList(body, &list); err != nil {
		return BackfillPage{}, err
	}
	for _, l := range list {
		if l.ID <= 0 {
			return BackfillPage{}, malformed(backfillEvent, "label needs an id")
		}
	}
	ls := toLabels(list, repositoryID, 0)
	return BackfillPage{Labels: ls, Items: len(ls)}, nil
}

// DecodeBackfillMilestones maps a page of GET /repos/{o}/{r}/milestones.
func DecodeBackfillMilestones(body []byte, repositoryID int64) (BackfillPage, error) {
	var list []ghMilestone
	if err := decodeList(body, &list); err != nil {
		return BackfillPage{}, err
	}
	var p BackfillPage
	for i := range list {
		m, ok := toMilestone(&list[i], repositoryID, 0)
		if !ok {
			return BackfillPage{}, malformed(backfillEvent, "milestone needs an id")
		}
		p.Milestones = append(p.Milestones, m)
		p.Users = append(p.Users, users(0, list[i].Creator)...)
	}
	p.Items = len(p.Milestones)
	return p, nil
}

// decodeList decodes a JSON array; anything else (an object, null) is a parsing failure.
func decodeList[T any](body []byte, v *[]T) error {
	if err := decode(backfillEvent, body, v); err != nil {
		return err
	}
	if *v == nil {
		var probe json.RawMessage
		_ = json.Unmarshal(body, &probe)
		if string(probe) != "[]" {
			return malformed(backfillEvent, "not a list")
		}
	}
	return nil
}

// Write writes the page in tx for workspace ws: users, labels, milestones, then the issues or
// pull requests, each kind in id order, so two pages (and a handler's step, which holds a
// milestone before its issue) lock rows in one order.
func (p BackfillPage) Write(ctx context.Context, tx ports.Tx, store BackfillWriter, ws int64) error {
	if p.Repository != nil {
		if p.Repository.OwnerID > 0 && p.Repository.OwnerLogin != "" {
			// The owner is recorded as a user; an organization is mirrored by its own events.
			if err := store.UpsertUsers(ctx, tx, ws, []githubmodel.User{{ID: p.Repository.OwnerID, Login: p.Repository.OwnerLogin}}); err != nil {
				return err
			}
		}
		if err := store.UpsertRepository(ctx, tx, ws, *p.Repository); err != nil {
			return err
		}
	}
	if us := dedupeUsers(p.Users); len(us) > 0 {
		if err := store.UpsertUsers(ctx, tx, ws, us); err != nil {
			return err
		}
	}
	if ls := dedupeLabels(p.Labels); len(ls) > 0 {
		if err := store.UpsertLabels(ctx, tx, ws, ls); err != nil {
			return err
		}
	}
	ms := dedupeBy(p.Milestones, func(m githubmodel.Milestone) int64 { return m.ID })
	slices.SortFunc(ms, func(a, b githubmodel.Milestone) int { return cmp.Compare(a.ID, b.ID) })
	for _, m := range ms {
		if err := store.UpsertMilestone(ctx, tx, ws, m); err != nil {
			return err
		}
	}
	is := slices.Clone(p.Issues)
	slices.SortFunc(is, func(a, b githubmodel.Issue) int { return cmp.Compare(a.ID, b.ID) })
	for _, i := range is {
		if err := store.UpsertIssue(ctx, tx, ws, i); err != nil {
			return err
		}
	}
	prs := slices.Clone(p.PullRequests)
	slices.SortFunc(prs, func(a, b githubmodel.PullRequest) int { return cmp.Compare(a.ID, b.ID) })
	for _, pr := range prs {
		if _, err := store.UpsertPullRequest(ctx, tx, ws, pr); err != nil {
			return err
		}
	}
	return nil
}
