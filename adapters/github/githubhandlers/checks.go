package githubhandlers

import (
	"context"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// status mirrors a commit status in the orchestration boundary: the event write in its short
// step ("status.upsert"), then the context (the open pull requests whose head is the commit,
// read from the mirror, so a retry finds it again), the commit's check runs read from GitHub
// and written in their own step ("status.check_runs"), and one refresh step per pull request.
func (b base) status(ctx context.Context, d ports.Dispatch) error {
	const event = EventStatus
	var p struct {
		envelope
		ID          int64   `json:"id"`
		SHA         string  `json:"sha"`
		Context     string  `json:"context"`
		State       string  `json:"state"`
		Description *string `json:"description"`
		TargetURL   *string `json:"target_url"`
		CreatedAt   ghTime  `json:"created_at"`
		UpdatedAt   ghTime  `json:"updated_at"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	sha := strings.ToLower(p.SHA)
	if p.ID <= 0 || !isSHA(sha) || p.State == "" {
		return malformed(event, "status needs an id, a commit SHA and a state")
	}
	st := githubmodel.CommitStatus{
		ID: p.ID, RepositoryID: repo.ID, SHA: sha, Context: p.Context, State: p.State,
		Description: p.Description, TargetURL: p.TargetURL, CreatedAt: p.CreatedAt.ptr(),
		Version: versionOf(p.UpdatedAt.or(p.CreatedAt), eventID),
	}
	err = b.step(ctx, stepStatus, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		return b.deps.Store.UpsertCommitStatus(ctx, tx, ws, st)
	})
	if err != nil {
		return wrap(event, err)
	}
	prs, err := b.deps.Store.PullRequestsWithHead(ctx, ws, repo.ID, sha)
	if err != nil {
		return wrap(event, err)
	}
	err = b.checkRuns(ctx, d, ws, repo.ID, stepStatusRuns, func(ctx context.Context) ([]githubmodel.CheckRun, error) {
		return b.deps.Reader.CheckRunsForRef(ctx, p.access(ws, repo.ID), repo.FullName, sha)
	})
	if err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.refreshPullRequests(ctx, d, ws, prs))
}

// checkSuite mirrors a check suite requested, rerequested or completed in the orchestration
// boundary: the event write in its short step ("check_suite.upsert"), the suite's check runs
// read from GitHub and written in their own step ("check_suite.check_runs"), then one refresh
// step per pull request of the suite (those the payload names and the open mirrored ones with
// the suite's head, read again on a retry).
func (b base) checkSuite(ctx context.Context, d ports.Dispatch) error {
	const event = EventCheckSuite
	var p struct {
		envelope
		CheckSuite *struct {
			ID           int64   `json:"id"`
			HeadBranch   *string `json:"head_branch"`
			HeadSHA      string  `json:"head_sha"`
			Status       string  `json:"status"`
			Conclusion   *string `json:"conclusion"`
			CreatedAt    ghTime  `json:"created_at"`
			UpdatedAt    ghTime  `json:"updated_at"`
			PullRequests []struct {
				ID int64 `json:"id"`
			} `json:"pull_requests"`
			App *struct {
				Slug *string `json:"slug"`
			} `json:"app"`
		} `json:"check_suite"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	cs := p.CheckSuite
	if cs == nil || cs.ID <= 0 || !isSHA(strings.ToLower(cs.HeadSHA)) {
		return malformed(event, "check_suite needs an id and a head SHA")
	}
	suite := githubmodel.CheckSuite{
		ID: cs.ID, RepositoryID: repo.ID, HeadSHA: strings.ToLower(cs.HeadSHA), HeadBranch: cs.HeadBranch,
		Status: cs.Status, Conclusion: cs.Conclusion, CreatedAt: cs.CreatedAt.ptr(),
		Version: versionOf(cs.UpdatedAt.or(cs.CreatedAt), eventID),
	}
	if cs.App != nil {
		suite.AppSlug = cs.App.Slug
	}
	err = b.step(ctx, stepCheckSuite, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		return b.deps.Store.UpsertCheckSuite(ctx, tx, ws, suite)
	})
	if err != nil {
		return wrap(event, err)
	}
	err = b.checkRuns(ctx, d, ws, repo.ID, stepCheckSuiteRuns, func(ctx context.Context) ([]githubmodel.CheckRun, error) {
		return b.deps.Reader.CheckRunsForSuite(ctx, p.access(ws, repo.ID), repo.FullName, suite.ID)
	})
	if err != nil {
		return wrap(event, err)
	}
	prs, err := b.deps.Store.PullRequestsWithHead(ctx, ws, repo.ID, suite.HeadSHA)
	if err != nil {
		return wrap(event, err)
	}
	for _, pr := range cs.PullRequests {
		prs = append(prs, pr.ID)
	}
	return wrap(event, b.refreshPullRequests(ctx, d, ws, prs))
}

// isSHA accepts a lower-case hexadecimal Git object id (SHA-1 or SHA-256).
func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
