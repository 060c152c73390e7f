package githubhandlers

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// maxPayloadCommits is the most commits GitHub puts into a push payload; a payload that holds
// that many may have left some out.
const maxPayloadCommits = 2048

// zeroSHA is the before (a created ref) or after (a deleted ref) of a push.
var zeroSHA = strings.Repeat("0", 40)

// push mirrors a push:
//
//  1. "push.persist" claims the webhook's own write: the repository and where the ref points
//     now (a deleted ref is a tombstone);
//  2. commits the payload left out (size above the commits it lists) are read from GitHub,
//     outside any transaction;
//  3. each commit has its own step named by repository id and SHA
//     ("push.commit/<repository>/<sha>"), so a retry skips the commits that committed and
//     writes the rest, whatever their position. The steps are claimed together and the
//     commits written in one fenced transaction; when it fails for any reason but a fence
//     rejection nothing of it committed, and the commits are written again one step each, in
//     order, up to the first that fails (the commits before it stay committed);
//  4. the check runs of the new head are read from GitHub and written in their own step,
//     "push.check_runs".
func (b base) push(ctx context.Context, d ports.Dispatch) error {
	const event = EventPush
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Ref          string         `json:"ref"`
		Before       string         `json:"before"`
		After        string         `json:"after"`
		Deleted      bool           `json:"deleted"`
		Commits      []ghPushCommit `json:"commits"`
		Size         *int           `json:"size"`
		DistinctSize *int           `json:"distinct_size"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	repo, err := toRepository(event, p.Repository, eventID)
	if err != nil {
		return err
	}
	before, after := strings.ToLower(p.Before), strings.ToLower(p.After)
	if p.Ref == "" || !isSHA(after) || !isSHA(before) {
		return malformed(event, "push needs a ref and before and after SHAs")
	}
	deleted := p.Deleted || after == zeroSHA
	ref := githubmodel.Ref{RepositoryID: repo.ID, Ref: p.Ref, SHA: after, Deleted: deleted, Version: versionOf(ghTime{}, eventID)}
	commits := make([]githubmodel.Commit, 0, len(p.Commits))
	for _, c := range p.Commits {
		sha := strings.ToLower(c.ID)
		if !isSHA(sha) {
			return malformed(event, "commit id %q is not a SHA", c.ID)
		}
		commits = append(commits, githubmodel.Commit{
			RepositoryID: repo.ID, SHA: sha, Message: c.Message,
			AuthorName: c.Author.Name, AuthorEmail: c.Author.Email, AuthorLogin: c.Author.Username,
			CommitterName: c.Committer.Name, CommitterEmail: c.Committer.Email,
			CommittedAt: c.Timestamp.ptr(), HTMLURL: c.URL, Version: versionOf(c.Timestamp, eventID),
		})
	}

	err = b.step(ctx, stepPushPersist, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		return b.deps.Store.SetRef(ctx, tx, ws, ref)
	})
	if err != nil {
		return wrap(event, err)
	}
	if deleted {
		return nil
	}

	if b.deps.Reader != nil && before != zeroSHA && leftOut(len(p.Commits), p.Size, p.DistinctSize) {
		read, err := b.deps.Reader.CompareCommits(ctx, p.access(ws, repo.ID), repo.FullName, before, after)
		if err != nil && !errors.Is(err, githubmodel.ErrProviderNotFound) {
			return wrap(event, err)
		}
		commits = mergeCommits(commits, read, repo.ID, eventID)
	}
	if err := b.writeCommits(ctx, ws, repo.ID, commits); err != nil {
		return wrap(event, err)
	}
	return wrap(event, b.checkRuns(ctx, d, ws, repo.ID, stepPushRuns, func(ctx context.Context) ([]githubmodel.CheckRun, error) {
		return b.deps.Reader.CheckRunsForRef(ctx, p.access(ws, repo.ID), repo.FullName, after)
	}))
}

// writeCommits writes a push's commits under their steps (push, step 3): all in one fenced
// transaction, then, after a failure that is not a fence rejection, one step each.
func (b base) writeCommits(ctx context.Context, ws, repositoryID int64, commits []githubmodel.Commit) error {
	steps := make([]inbox.Step, len(commits))
	for i, c := range commits {
		step, err := inbox.NewStep("push.commit", strconv.FormatInt(repositoryID, 10), c.SHA)
		if err != nil {
			return err
		}
		steps[i] = step
	}
	if len(commits) > 1 {
		_, err := b.deps.Inbox.Steps(ctx, steps, func(ctx context.Context, tx ports.Tx, claimed []bool) error {
			batch := make([]githubmodel.Commit, 0, len(commits))
			for i, c := range commits {
				if claimed[i] {
					batch = append(batch, c)
				}
			}
			return b.deps.Store.UpsertCommits(ctx, tx, ws, batch)
		})
		if err == nil || inbox.IsFenceRejection(err) {
			return err
		}
	}
	for i, c := range commits {
		err := b.step(ctx, steps[i], func(ctx context.Context, tx ports.Tx) error {
			return b.deps.Store.UpsertCommit(ctx, tx, ws, c)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// leftOut reports whether a push payload with listed commits left some out: GitHub says how
// many the push had (size, distinct_size) where it knows, and caps the list it sends.
func leftOut(listed int, size, distinctSize *int) bool {
	switch {
	case size != nil && *size > listed:
		return true
	case distinctSize != nil && *distinctSize > listed:
		return true
	}
	return listed >= maxPayloadCommits
}

// mergeCommits adds the commits GitHub returned that the payload did not list, after the
// listed ones (both oldest first), each SHA once.
func mergeCommits(listed, read []githubmodel.Commit, repositoryID, eventID int64) []githubmodel.Commit {
	seen := make(map[string]bool, len(listed))
	for _, c := range listed {
		seen[c.SHA] = true
	}
	out := listed
	for _, c := range read {
		sha := strings.ToLower(c.SHA)
		if !isSHA(sha) || seen[sha] {
			continue
		}
		seen[sha] = true
		c.SHA, c.RepositoryID = sha, repositoryID
		c.Version = githubmodel.Version{EventID: eventID}
		if c.CommittedAt != nil {
			c.Version.UpdatedAt = *c.CommittedAt
		}
		out = append(out, c)
	}
	return out
}
