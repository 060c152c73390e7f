package main

import (
	"fmt"
	"strconv"
	"time"
)

// The bodies of the deliveries, shaped as each provider writes them, with the scenario's ids.

// GitHub

// ghTime is a GitHub timestamp d from the scenario's now.
func (s scenario) ghTime(d time.Duration) string { return s.now.Add(d).Format(time.RFC3339) }

// fullName is the repository's owner/name.
func (s scenario) fullName() string { return s.orgLogin + "/" + s.repoName }

// ghUser is a GitHub user object.
func ghUser(login string, id int64) map[string]any {
	return map[string]any{
		"login": login, "id": id, "node_id": "MDQ6VXNlcj" + strconv.FormatInt(id, 10),
		"avatar_url": fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id),
		"url":        "https://api.github.com/users/" + login, "html_url": "https://github.com/" + login,
		"type": "User", "site_admin": false,
	}
}

func (s scenario) ghOrganization() map[string]any {
	return map[string]any{
		"login": s.orgLogin, "id": s.orgID, "node_id": "O_kgDO" + strconv.FormatInt(s.orgID, 36),
		"url":         "https://api.github.com/orgs/" + s.orgLogin,
		"description": "Hephaestus demo organization",
	}
}

// ghRepository is the repository object; push payloads write its times as Unix seconds.
func (s scenario) ghRepository(unixTimes bool) map[string]any {
	created, pushed := any(s.ghTime(-90*24*time.Hour)), any(s.ghTime(-time.Hour))
	if unixTimes {
		created, pushed = s.now.Add(-90*24*time.Hour).Unix(), s.now.Unix()
	}
	owner := ghUser(s.orgLogin, s.orgID)
	owner["type"] = "Organization"
	return map[string]any{
		"id": s.repoID, "node_id": "R_kgDO" + strconv.FormatInt(s.repoID, 36), "name": s.repoName,
		"full_name": s.fullName(), "private": false, "owner": owner,
		"html_url":    "https://github.com/" + s.fullName(),
		"description": "Sample repository of the Hephaestus demo", "fork": false,
		"url":        "https://api.github.com/repos/" + s.fullName(),
		"created_at": created, "updated_at": s.ghTime(-time.Hour), "pushed_at": pushed,
		"default_branch": "main", "visibility": "public", "archived": false, "topics": []string{"demo"},
	}
}

func (s scenario) ghInstallation() map[string]any {
	return map[string]any{"id": s.installationID, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u" + strconv.FormatInt(s.installationID, 10)}
}

func (s scenario) githubIssueOpened() []byte {
	author := ghUser("octocat", 583231)
	return mustJSON(map[string]any{
		"action": "opened",
		"issue": map[string]any{
			"url":      fmt.Sprintf("https://api.github.com/repos/%s/issues/%d", s.fullName(), s.issueNumber),
			"html_url": fmt.Sprintf("https://github.com/%s/issues/%d", s.fullName(), s.issueNumber),
			"id":       s.issueID, "node_id": "I_kwDO" + strconv.FormatInt(s.issueID, 36), "number": s.issueNumber,
			"title": s.issueTitle, "user": author,
			"labels": []any{map[string]any{
				"id": s.labelID, "node_id": "LA_kwDO" + strconv.FormatInt(s.labelID, 36), "name": "bug", "color": "d73a4a",
				"default": true, "description": "Something isn't working",
				"url": "https://api.github.com/repos/" + s.fullName() + "/labels/bug",
			}},
			"state": "open", "locked": false, "assignee": nil, "assignees": []any{}, "milestone": nil,
			"comments": 0, "created_at": s.ghTime(-2 * time.Minute), "updated_at": s.ghTime(-2 * time.Minute),
			"closed_at": nil, "author_association": "MEMBER", "state_reason": nil,
			"body": "The README badge points at the old workflow file, so it shows a failing build.",
		},
		"repository":   s.ghRepository(false),
		"organization": s.ghOrganization(),
		"sender":       author,
		"installation": s.ghInstallation(),
	})
}

// githubBrokenIssue is signed and routable, but its issue is a string: the handler cannot
// decode it, which fails the same way on every attempt, so the row is DEAD on its first one.
func (s scenario) githubBrokenIssue() []byte {
	return mustJSON(map[string]any{
		"action":       "opened",
		"issue":        fmt.Sprintf("https://github.com/%s/issues/%d", s.fullName(), s.badIssueNumber),
		"repository":   s.ghRepository(false),
		"organization": s.ghOrganization(),
		"sender":       ghUser("octocat", 583231),
		"installation": s.ghInstallation(),
	})
}

func (s scenario) githubPush() []byte {
	mona := map[string]any{"name": "Mona Lisa Octocat", "email": "mona@example.com", "username": "monalisa"}
	commit := func(i int) map[string]any {
		return map[string]any{
			"id": s.commitSHAs[i], "tree_id": randomSHA(), "distinct": true, "message": s.commitMessages[i],
			"timestamp": s.now.Add(time.Duration(i-2) * time.Minute).Format(time.RFC3339),
			"url":       "https://github.com/" + s.fullName() + "/commit/" + s.commitSHAs[i],
			"author":    mona, "committer": mona,
			"added": []string{}, "removed": []string{}, "modified": []string{[]string{"README.md", "RELEASING.md"}[i]},
		}
	}
	c0, c1 := commit(0), commit(1)
	return mustJSON(map[string]any{
		"ref": "refs/heads/main", "before": s.beforeSHA, "after": s.commitSHAs[1],
		"repository":   s.ghRepository(true),
		"pusher":       map[string]any{"name": "monalisa", "email": "mona@example.com"},
		"organization": s.ghOrganization(), "sender": ghUser("monalisa", 9919),
		"installation": s.ghInstallation(),
		"created":      false, "deleted": false, "forced": false, "base_ref": nil,
		"compare":     "https://github.com/" + s.fullName() + "/compare/" + s.beforeSHA[:12] + "..." + s.commitSHAs[1][:12],
		"commits":     []any{c0, c1},
		"head_commit": c1,
	})
}

// GitLab

// glTime is a GitLab timestamp d from the scenario's now.
func (s scenario) glTime(d time.Duration) string {
	return s.now.Add(d).Format("2006-01-02 15:04:05 MST")
}

func (s scenario) glProject() map[string]any {
	web := s.gitlabURL + "/" + s.projectPath
	return map[string]any{
		"id": s.projectID, "name": "onboarding", "description": "Onboarding guides",
		"web_url": web, "avatar_url": nil,
		"git_ssh_url":  "git@gitlab.com:" + s.projectPath + ".git",
		"git_http_url": web + ".git", "namespace": "demo-group-" + s.suffix,
		"visibility_level": 20, "path_with_namespace": s.projectPath, "default_branch": "main",
		"ci_config_path": nil, "homepage": web,
	}
}

func (s scenario) glUser() map[string]any {
	return map[string]any{
		"id": s.gitlabUserID, "name": "Ana López", "username": s.gitlabUsername,
		"avatar_url": "https://secure.gravatar.com/avatar/0?s=80&d=identicon", "email": "[REDACTED]",
	}
}

func (s scenario) glRepository() map[string]any {
	web := s.gitlabURL + "/" + s.projectPath
	return map[string]any{"name": "onboarding", "url": "git@gitlab.com:" + s.projectPath + ".git",
		"description": "Onboarding guides", "homepage": web}
}

func (s scenario) gitlabIssue() []byte {
	label := map[string]any{
		"id": 206, "title": "documentation", "color": "#428BCA", "project_id": s.projectID,
		"created_at": s.glTime(-48 * time.Hour), "updated_at": s.glTime(-48 * time.Hour),
		"template": false, "description": nil, "type": "ProjectLabel", "group_id": nil,
	}
	return mustJSON(map[string]any{
		"object_kind": "issue", "event_type": "issue",
		"user": s.glUser(), "project": s.glProject(), "repository": s.glRepository(),
		"object_attributes": map[string]any{
			"id": s.glIssueID, "iid": s.glIssueIID, "project_id": s.projectID,
			"title":       "Write the first-week checklist",
			"description": "New joiners ask the same questions in their first week; collect them.",
			"state":       "opened", "author_id": s.gitlabUserID, "milestone_id": nil, "confidential": false,
			"created_at": s.glTime(-time.Minute), "updated_at": s.glTime(-time.Minute), "closed_at": nil,
			"url":    fmt.Sprintf("%s/%s/-/issues/%d", s.gitlabURL, s.projectPath, s.glIssueIID),
			"action": "open", "labels": []any{label},
		},
		"labels": []any{label}, "assignees": []any{}, "changes": map[string]any{},
	})
}

func (s scenario) gitlabMergeRequest() []byte {
	url := fmt.Sprintf("%s/%s/-/merge_requests/%d", s.gitlabURL, s.projectPath, s.mrIID)
	return mustJSON(map[string]any{
		"object_kind": "merge_request", "event_type": "merge_request",
		"user": s.glUser(), "project": s.glProject(), "repository": s.glRepository(),
		"object_attributes": map[string]any{
			"id": s.mrID, "iid": s.mrIID, "target_branch": "main", "source_branch": "docs/onboarding-guide",
			"source_project_id": s.projectID, "target_project_id": s.projectID, "author_id": s.gitlabUserID,
			"title": s.mrTitle, "description": "Closes #" + strconv.Itoa(s.glIssueIID),
			"state": "opened", "draft": false, "work_in_progress": false,
			"merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
			"blocking_discussions_resolved": true,
			"created_at":                    s.glTime(-30 * time.Second), "updated_at": s.glTime(-30 * time.Second),
			"merged_at": nil, "closed_at": nil, "url": url, "action": "open",
			"last_commit": map[string]any{
				"id": s.mrHeadSHA, "message": "Add the onboarding guide\n", "title": "Add the onboarding guide",
				"timestamp": s.now.Add(-time.Minute).Format(time.RFC3339),
				"url":       s.gitlabURL + "/" + s.projectPath + "/-/commit/" + s.mrHeadSHA,
				"author":    map[string]any{"name": "Ana López", "email": "[REDACTED]"},
			},
		},
		"labels": []any{}, "changes": map[string]any{}, "assignees": []any{}, "reviewers": []any{},
	})
}

// Slack

func (s scenario) slackCallback(eventID string, event map[string]any) []byte {
	return mustJSON(map[string]any{
		"token": "XXYYZZ" + s.suffix, "team_id": s.teamID, "context_team_id": s.teamID,
		"api_app_id": s.appID, "event": event, "type": "event_callback", "event_id": eventID,
		"event_time": s.now.Unix(), "is_ext_shared_channel": false,
		"authorizations": []any{map[string]any{
			"enterprise_id": nil, "team_id": s.teamID, "user_id": s.botUserID, "is_bot": true,
			"is_enterprise_install": false,
		}},
	})
}

// slackBotJoined is the app's own bot user joining the channel: the handler grants the
// channel consent, after which its messages are stored.
func (s scenario) slackBotJoined(eventID string) []byte {
	return s.slackCallback(eventID, map[string]any{
		"type": "member_joined_channel", "user": s.botUserID, "channel": s.channelID, "channel_type": "C",
		"team": s.teamID, "inviter": s.personID, "event_ts": fmt.Sprintf("%d.000100", s.now.Unix()-5),
	})
}

func (s scenario) slackMessage(eventID string) []byte {
	return s.slackCallback(eventID, map[string]any{
		"type": "message", "channel": s.channelID, "channel_type": "channel", "user": s.personID,
		"text": s.messageText, "ts": s.messageTS, "event_ts": s.messageTS, "team": s.teamID,
		"client_msg_id": uuid(),
		"blocks": []any{map[string]any{"type": "rich_text", "block_id": "b1", "elements": []any{
			map[string]any{"type": "rich_text_section", "elements": []any{map[string]any{"type": "text", "text": s.messageText}}},
		}}},
	})
}

// Outline

func (s scenario) outlineDocumentUpdate(id string) []byte {
	at := s.now.Add(-10 * time.Second).Format("2006-01-02T15:04:05.000Z")
	actor := map[string]any{"id": s.actorID, "name": "Ana López", "avatarUrl": nil, "color": "#FF5C80",
		"role": "member", "isSuspended": false, "createdAt": s.now.Add(-400 * 24 * time.Hour).Format(time.RFC3339)}
	return mustJSON(map[string]any{
		"id": id, "actorId": s.actorID, "webhookSubscriptionId": uuid(), "createdAt": at,
		"event": "documents.update",
		"payload": map[string]any{
			"id": s.documentID,
			"model": map[string]any{
				"id": s.documentID, "url": "/doc/release-checklist-Kq3sdE9vL2", "urlId": "Kq3sdE9vL2",
				"title": s.documentTitle, "emoji": nil,
				"text":         "1. Tag the release\n2. Publish the notes\n3. Announce it in #releases\n",
				"collectionId": s.collectionID, "parentDocumentId": nil, "revision": 3,
				"createdAt": s.now.Add(-72 * time.Hour).Format(time.RFC3339), "updatedAt": at,
				"publishedAt": s.now.Add(-72 * time.Hour).Format(time.RFC3339), "archivedAt": nil, "deletedAt": nil,
				"createdBy": actor, "updatedBy": actor, "fullWidth": false, "template": false,
				"tasks": map[string]any{"completed": 0, "total": 3},
			},
		},
	})
}
