package main

import (
	"net/http"
	"strconv"
	"time"
)

// delivery is one webhook request the demo sends.
type delivery struct {
	provider string // GITHUB, GITLAB, SLACK, OUTLINE
	event    string // as the table shows it
	key      string // the delivery key the server derives
	path     string
	body     []byte
	// headers signs body at send time.
	headers func(body []byte) http.Header
	// good: it must be stored once and end DONE; otherwise it must end DEAD (bad) or, for a
	// duplicate, store nothing.
	good      bool
	bad       bool
	duplicate bool
}

// deliveries builds the signed deliveries of the run, in the order they are sent. The Slack
// consent event comes before the channel message: both are in the channel's scope, which the
// claimers handle in arrival order.
func (s scenario) deliveries(cfg demoConfig, gitlabConn, outlineConn int64) []delivery {
	gh := func(event, key string) func([]byte) http.Header {
		return func(body []byte) http.Header {
			h := jsonHeaders("GitHub-Hookshot/a1b2c3d")
			h.Set("X-GitHub-Event", event)
			h.Set("X-GitHub-Delivery", key)
			h.Set("X-GitHub-Hook-ID", "498765432")
			if cfg.GitHubAppID != "" {
				h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
				h.Set("X-GitHub-Hook-Installation-Target-ID", cfg.GitHubAppID)
			}
			h.Set("X-Hub-Signature-256", signGitHub(cfg.GitHubWebhookSecret, body))
			return h
		}
	}
	gl := func(event, key string) func([]byte) http.Header {
		return func([]byte) http.Header {
			h := jsonHeaders("GitLab/17.8.1")
			h.Set("X-Gitlab-Event", event)
			h.Set("X-Gitlab-Event-UUID", key)
			h.Set("Idempotency-Key", key)
			h.Set("X-Gitlab-Instance", s.gitlabURL)
			h.Set("X-Gitlab-Webhook-UUID", "5b6a2e55-3b1f-4a4c-9d1e-2f8c0e7a9b10")
			h.Set("X-Gitlab-Token", s.gitlabSecret)
			return h
		}
	}
	sl := func(body []byte) http.Header {
		ts := time.Now().Unix()
		h := jsonHeaders("Slackbot 1.0 (+https://api.slack.com/robots)")
		h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
		h.Set("X-Slack-Signature", signSlack(cfg.SlackSigningSecret, ts, body))
		return h
	}
	ol := func(body []byte) http.Header {
		h := jsonHeaders("Outline-Webhooks")
		h.Set("Outline-Signature", signOutline(s.outlineSecret, time.Now(), body))
		return h
	}

	issueKey, pushKey, badKey := uuid(), uuid(), uuid()
	glIssueKey, mrKey := uuid(), uuid()
	joinKey, messageKey := "Ev"+randomText(10), "Ev"+randomText(10)
	outlineKey := uuid()
	glPath := "/webhooks/gitlab/" + strconv.FormatInt(gitlabConn, 10)
	olPath := "/webhooks/outline/" + strconv.FormatInt(outlineConn, 10)

	issue := delivery{provider: "GITHUB", event: "issues (opened)", key: issueKey, path: "/webhooks/github",
		body: s.githubIssueOpened(), headers: gh("issues", issueKey), good: true}
	return []delivery{
		issue,
		{provider: "GITHUB", event: "push (2 commits)", key: pushKey, path: "/webhooks/github",
			body: s.githubPush(), headers: gh("push", pushKey), good: true},
		{provider: "GITHUB", event: "issues (issue not an object)", key: badKey, path: "/webhooks/github",
			body: s.githubBrokenIssue(), headers: gh("issues", badKey), bad: true},
		{provider: "GITLAB", event: "Issue Hook (open)", key: glIssueKey, path: glPath,
			body: s.gitlabIssue(), headers: gl("Issue Hook", glIssueKey), good: true},
		{provider: "GITLAB", event: "Merge Request Hook (open)", key: mrKey, path: glPath,
			body: s.gitlabMergeRequest(), headers: gl("Merge Request Hook", mrKey), good: true},
		{provider: "SLACK", event: "member_joined_channel (the app's bot)", key: joinKey, path: "/webhooks/slack",
			body: s.slackBotJoined(joinKey), headers: sl, good: true},
		{provider: "SLACK", event: "message (channel)", key: messageKey, path: "/webhooks/slack",
			body: s.slackMessage(messageKey), headers: sl, good: true},
		{provider: "OUTLINE", event: "documents.update", key: outlineKey, path: olPath,
			body: s.outlineDocumentUpdate(outlineKey), headers: ol, good: true},
		{provider: "GITHUB", event: "issues (opened), redelivered", key: issueKey, path: "/webhooks/github",
			body: issue.body, headers: issue.headers, duplicate: true},
	}
}

// jsonHeaders are the headers every provider's delivery starts with: a JSON body and the
// provider's user agent.
func jsonHeaders(userAgent string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	return h
}
