package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// mirrored reads back, through each provider's read API, what the good deliveries stored, and
// prints it as one table.
func (d *demo) mirrored(ctx context.Context) error {
	d.printf("\nMirrored (read back through the read APIs):\n")
	tw := d.table()
	row := func(cols ...string) { fmt.Fprintln(tw, "  "+strings.Join(cols, "\t")) }
	row("API", "ROW")
	for _, read := range []func(context.Context, func(...string)) error{d.mirroredGitHub, d.mirroredGitLab, d.mirroredSlack, d.mirroredOutline} {
		if err := read(ctx, row); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// mirroredGitHub checks the repository, the opened issue and the pushed commits.
func (d *demo) mirroredGitHub(ctx context.Context, row func(...string)) error {
	s, hx := d.s, d.api.hx
	repos, err := hx.ListRepositoriesWithResponse(ctx, s.slug, nil)
	if err := outcome("listRepositories", repos, err, http.StatusOK); err != nil {
		return fmt.Errorf("GitHub repositories: %w", err)
	}
	if repos.JSON200 == nil {
		return errNoAnswer("listRepositories")
	}
	found := false
	for _, r := range repos.JSON200.Items {
		row("GET …/repositories", fmt.Sprintf("repository %d %s", r.Id, r.FullName))
		found = found || int64(r.Id) == s.repoID
	}
	d.expect(found, "GitHub: repository %d is not mirrored", s.repoID)
	var issues []hxapi.Issue
	var pulls []hxapi.PullRequest
	var commits []hxapi.Commit
	if found {
		repo := strconv.FormatInt(s.repoID, 10)
		ri, err := hx.ListRepositoryIssuesWithResponse(ctx, s.slug, repo, nil)
		if err := outcome("listRepositoryIssues", ri, err, http.StatusOK); err != nil {
			return fmt.Errorf("GitHub issues: %w", err)
		}
		rp, err := hx.ListRepositoryPullsWithResponse(ctx, s.slug, repo, nil)
		if err := outcome("listRepositoryPulls", rp, err, http.StatusOK); err != nil {
			return fmt.Errorf("GitHub pull requests: %w", err)
		}
		rc, err := hx.ListRepositoryCommitsWithResponse(ctx, s.slug, repo, nil)
		if err := outcome("listRepositoryCommits", rc, err, http.StatusOK); err != nil {
			return fmt.Errorf("GitHub commits: %w", err)
		}
		if ri.JSON200 == nil || rp.JSON200 == nil || rc.JSON200 == nil {
			return errNoAnswer("listRepositoryIssues, listRepositoryPulls or listRepositoryCommits")
		}
		issues, pulls, commits = ri.JSON200.Items, rp.JSON200.Items, rc.JSON200.Items
	}
	found = false
	for _, i := range issues {
		var labels []string
		if i.Labels != nil {
			labels = *i.Labels
		}
		row("GET …/repositories/{id}/issues", fmt.Sprintf("issue #%d %q %s by %s, labels %s", i.Number, i.Title, i.State, deref(i.Author), strings.Join(labels, ",")))
		found = found || (i.Number == s.issueNumber && i.Title == s.issueTitle)
	}
	d.expect(found, "GitHub: issue #%d of the issues delivery is not mirrored", s.issueNumber)
	for _, p := range pulls {
		row("GET …/repositories/{id}/pulls", fmt.Sprintf("pull request #%d %q", p.Number, p.Title))
	}
	if len(pulls) == 0 {
		row("GET …/repositories/{id}/pulls", "(none: the demo sends no pull_request)")
	}
	for _, sha := range s.commitSHAs {
		found := false
		for _, c := range commits {
			found = found || c.Sha == sha
		}
		d.expect(found, "GitHub: commit %s of the push is not mirrored", sha[:7])
	}
	for _, c := range commits {
		row("GET …/repositories/{id}/commits", fmt.Sprintf("commit %s %q by %s", c.Sha[:7], firstLine(deref(c.Message)), deref(c.AuthorName)))
	}
	return nil
}

// mirroredGitLab checks the project and the merge request.
func (d *demo) mirroredGitLab(ctx context.Context, row func(...string)) error {
	s, hx := d.s, d.api.hx
	projects, err := hx.ListGitLabProjectsWithResponse(ctx, s.slug, nil)
	if err := outcome("listGitLabProjects", projects, err, http.StatusOK); err != nil {
		return fmt.Errorf("GitLab projects: %w", err)
	}
	if projects.JSON200 == nil {
		return errNoAnswer("listGitLabProjects")
	}
	found := false
	for _, p := range projects.JSON200.Items {
		row("GET …/gitlab/projects", fmt.Sprintf("project %d %s", p.Id, deref(p.PathWithNamespace)))
		found = found || int64(p.Id) == s.projectID
	}
	d.expect(found, "GitLab: project %d is not mirrored", s.projectID)
	if found {
		mrs, err := hx.ListGitLabMergeRequestsWithResponse(ctx, s.slug, strconv.FormatInt(s.projectID, 10), nil)
		if err := outcome("listGitLabMergeRequests", mrs, err, http.StatusOK); err != nil {
			return fmt.Errorf("GitLab merge requests: %w", err)
		}
		if mrs.JSON200 == nil {
			return errNoAnswer("listGitLabMergeRequests")
		}
		found = false
		for _, m := range mrs.JSON200.Items {
			ready := "readiness unknown"
			if m.Ready != nil {
				ready = "ready " + strconv.FormatBool(*m.Ready)
				if m.ReadinessReason != nil && *m.ReadinessReason != "" {
					ready += " (" + *m.ReadinessReason + ")"
				}
			}
			row("GET …/gitlab/projects/{id}/merge-requests", fmt.Sprintf("merge request !%d %q %s, %s", m.Iid, m.Title, m.State, ready))
			found = found || m.Iid == s.mrIID
		}
		d.expect(found, "GitLab: merge request !%d is not mirrored", s.mrIID)
	}
	row("", fmt.Sprintf("(the Issue Hook's issue #%d has no read API; its row is in the DONE count)", s.glIssueIID))
	return nil
}

// mirroredSlack checks the channel's consent (the bot joined) and its message.
func (d *demo) mirroredSlack(ctx context.Context, row func(...string)) error {
	s, hx := d.s, d.api.hx
	channels, err := hx.ListSlackChannelsWithResponse(ctx, s.slug, nil)
	if err := outcome("listSlackChannels", channels, err, http.StatusOK); err != nil {
		return fmt.Errorf("seed Slack channels: %w", err)
	}
	if channels.JSON200 == nil {
		return errNoAnswer("listSlackChannels")
	}
	found := false
	for _, c := range channels.JSON200.Items {
		row("GET …/slack/channels", fmt.Sprintf("channel %s consent %s", c.Id, c.Consent))
		found = found || (c.Id == s.channelID && c.Consent == "GRANTED")
	}
	d.expect(found, "Slack: channel %s has no GRANTED consent (the bot's member_joined_channel)", s.channelID)
	if found {
		msgs, err := hx.ListSlackMessagesWithResponse(ctx, s.slug, s.channelID, nil)
		if err := outcome("listSlackMessages", msgs, err, http.StatusOK); err != nil {
			return fmt.Errorf("seed Slack messages: %w", err)
		}
		if msgs.JSON200 == nil {
			return errNoAnswer("listSlackMessages")
		}
		found = false
		for _, m := range msgs.JSON200.Items {
			row("GET …/slack/channels/{id}/messages", fmt.Sprintf("message %s by %s %q", m.Ts, deref(m.UserId), m.Text))
			found = found || (m.Ts == s.messageTS && m.Text == s.messageText)
		}
		d.expect(found, "Slack: the channel message %s is not mirrored", s.messageTS)
	}
	return nil
}

// mirroredOutline checks the updated document.
func (d *demo) mirroredOutline(ctx context.Context, row func(...string)) error {
	s, hx := d.s, d.api.hx
	docs, err := hx.ListOutlineDocumentsWithResponse(ctx, s.slug, nil)
	if err := outcome("listOutlineDocuments", docs, err, http.StatusOK); err != nil {
		return fmt.Errorf("seed Outline documents: %w", err)
	}
	if docs.JSON200 == nil {
		return errNoAnswer("listOutlineDocuments")
	}
	found := false
	for _, doc := range docs.JSON200.Items {
		revision := "-"
		if doc.Revision != nil {
			revision = strconv.Itoa(*doc.Revision)
		}
		row("GET …/outline/documents", fmt.Sprintf("document %q revision %s in collection %s", doc.Title, revision, deref(doc.CollectionId)))
		found = found || (doc.Id == s.documentID && doc.Title == s.documentTitle)
	}
	d.expect(found, "Outline: document %s of documents.update is not mirrored", s.documentID)
	return nil
}
