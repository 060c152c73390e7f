// Command demo is `make demo`: against a running server (`make run`) it creates a demo
// workspace with one connection per provider through the management API, sends signed,
// real-shaped deliveries of GitHub, GitLab, Slack and Outline (one of them broken on purpose,
// one of them twice), waits for the claimers, and prints what was stored, handled, mirrored and
// dead-lettered; then it finds the dead letter's row by its provider delivery id, replays it
// and shows that it dies again. Every management, operator and read API call goes through the
// generated client, client/hxapi; only the webhook deliveries are built by hand (a signature
// covers the exact bytes sent).
//
// Environment:
//
//	HEPHAESTUS_DEMO_URL                server base URL (default http://localhost:8080)
//	HEPHAESTUS_ADMIN_TOKEN             admin token; else read from $HEPHAESTUS_DATA_DIR/admin-token
//	HEPHAESTUS_DATA_DIR                default ./.data (where `make run` writes the admin token)
//	HEPHAESTUS_GITHUB_WEBHOOK_SECRET   the server's GitHub App webhook secret
//	HEPHAESTUS_SLACK_SIGNING_SECRET    the server's Slack signing secret
//	HEPHAESTUS_GITHUB_APP_ID           optional: the server's GitHub App id
//
// `make run` and `make demo` give both secrets the same development defaults. The exit code is
// 0 only when everything expected happened.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// Environment variables the demo reads.
const (
	envDemoURL             = "HEPHAESTUS_DEMO_URL"
	envAdminToken          = "HEPHAESTUS_ADMIN_TOKEN"
	envDataDir             = "HEPHAESTUS_DATA_DIR"
	envGitHubWebhookSecret = "HEPHAESTUS_GITHUB_WEBHOOK_SECRET"
	envSlackSigningSecret  = "HEPHAESTUS_SLACK_SIGNING_SECRET"
	envGitHubAppID         = "HEPHAESTUS_GITHUB_APP_ID"

	defaultURL     = "http://localhost:8080"
	defaultDataDir = "./.data"
	adminTokenFile = "admin-token"

	// maxWait bounds each wait for the claimers.
	maxWait = 60 * time.Second
)

// demoConfig is what one run needs.
type demoConfig struct {
	BaseURL             string
	AdminToken          string
	GitHubWebhookSecret string
	SlackSigningSecret  string
	// GitHubAppID, when the server is configured with one, is sent in the hook target headers.
	GitHubAppID string
	// Wait bounds each wait for the claimers; 0 or more than a minute means a minute.
	Wait time.Duration
	// Poll is the period of the inbox polls while waiting (default 250ms).
	Poll time.Duration
	// Client is the HTTP client (default: one with a 15 s timeout).
	Client *http.Client
}

func main() {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "demo: FAILED: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// loadConfig reads the environment through getenv.
func loadConfig(getenv func(string) string) (demoConfig, error) {
	cfg := demoConfig{
		BaseURL:             strings.TrimRight(strings.TrimSpace(getenv(envDemoURL)), "/"),
		AdminToken:          strings.TrimSpace(getenv(envAdminToken)),
		GitHubWebhookSecret: getenv(envGitHubWebhookSecret),
		SlackSigningSecret:  getenv(envSlackSigningSecret),
		GitHubAppID:         strings.TrimSpace(getenv(envGitHubAppID)),
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("%s %q is not an http(s) base URL like %s", envDemoURL, cfg.BaseURL, defaultURL)
	}
	if cfg.AdminToken == "" {
		dir := strings.TrimSpace(getenv(envDataDir))
		if dir == "" {
			dir = defaultDataDir
		}
		path := filepath.Join(dir, adminTokenFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("no admin token: %s is unset and %s cannot be read (%v); "+
				"start the server with `make run` (its embedded mode writes that file) or set %s",
				envAdminToken, path, errors.Unwrap(err), envAdminToken)
		}
		cfg.AdminToken = strings.TrimSpace(string(b))
		if cfg.AdminToken == "" {
			return cfg, fmt.Errorf("no admin token: %s is empty", path)
		}
	}
	var missing []string
	if cfg.GitHubWebhookSecret == "" {
		missing = append(missing, envGitHubWebhookSecret)
	}
	if cfg.SlackSigningSecret == "" {
		missing = append(missing, envSlackSigningSecret)
	}
	if len(missing) > 0 {
		return cfg, fmt.Errorf("%s unset: run `make demo`, which gives the secrets the same development defaults as `make run`, "+
			"or export the server's values", strings.Join(missing, " and "))
	}
	return cfg, nil
}

// demo is one run.
type demo struct {
	cfg  demoConfig
	api  *api
	out  io.Writer
	s    scenario
	good int      // deliveries that must end DONE
	fail []string // what was expected and did not happen
}

func (d *demo) expect(ok bool, format string, args ...any) bool {
	if !ok {
		d.fail = append(d.fail, fmt.Sprintf(format, args...))
	}
	return ok
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// run is the whole demo. It returns nil only when everything expected happened: every good
// delivery stored once and handled (DONE) and its data readable through the read APIs, the
// broken one DEAD (again after its replay), the redelivery stored nothing.
func run(ctx context.Context, cfg demoConfig, out io.Writer) error {
	if cfg.Wait <= 0 || cfg.Wait > maxWait {
		cfg.Wait = maxWait
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 15 * time.Second}
	}
	a, err := newAPI(cfg.BaseURL, cfg.AdminToken, cfg.Client)
	if err != nil {
		return err
	}
	d := &demo{cfg: cfg, api: a, out: out, s: newScenario(time.Now())}

	if err := d.api.ready(ctx); err != nil {
		return fmt.Errorf("no ready server at %s (%v): start one with `make run`, or point %s at it", cfg.BaseURL, err, envDemoURL)
	}
	d.printf("Hephaestus demo against %s\n\n", cfg.BaseURL)

	conns, err := d.setUp(ctx)
	if err != nil {
		return err
	}
	deliveries := d.s.deliveries(cfg, int64(conns["GITLAB"]), int64(conns["OUTLINE"]))
	for _, dl := range deliveries {
		if dl.good {
			d.good++
		}
	}
	d.send(ctx, deliveries)

	d.printf("\nWaiting for the claimers (at most %s) ... ", cfg.Wait)
	inbox, took, err := d.waitDrained(ctx)
	if err != nil {
		d.printf("\n")
		return d.result(err)
	}
	d.printf("nothing QUEUED or LEASED after %s\n\n", took.Round(10*time.Millisecond))
	d.printInbox(inbox, deliveries)
	if err := d.mirrored(ctx); err != nil {
		return d.result(err)
	}
	dead, err := d.deadLetters(ctx, deliveries)
	if err != nil {
		return d.result(err)
	}
	if dead != nil {
		if err := d.replay(ctx, *dead); err != nil {
			return d.result(err)
		}
	}
	return d.result(nil)
}

// result ends the run: nil when nothing expected is missing.
func (d *demo) result(err error) error {
	if err != nil {
		d.fail = append(d.fail, err.Error())
	}
	if len(d.fail) > 0 {
		d.printf("\nResult: FAILED, %d expectation(s) not met:\n", len(d.fail))
		for _, f := range d.fail {
			d.printf("  - %s\n", f)
		}
		if len(d.fail) == 1 {
			return errors.New(d.fail[0])
		}
		return fmt.Errorf("%d expectations not met (all listed above), the first: %s", len(d.fail), d.fail[0])
	}
	d.printf("\nResult: OK. Every good delivery was stored once, handled (DONE) and mirrored; the broken one was\n" +
		"dead-lettered, replayed and dead-lettered again; the redelivery stored nothing.\n")
	return nil
}

// Set-up: workspace, connections, subscriptions.

// errNoAnswer is a wanted status whose documented JSON answer could not be read.
func errNoAnswer(operation string) error {
	return fmt.Errorf("%s: the answer is not the documented JSON", operation)
}

// setUp creates the workspace, one ACTIVE connection per provider and their subscriptions;
// it returns the connection ids by provider.
func (d *demo) setUp(ctx context.Context) (map[string]int, error) {
	s := d.s
	created, err := d.api.hx.CreateWorkspaceWithResponse(ctx, hxapi.CreateWorkspaceJSONRequestBody{Slug: s.slug, Name: "Demo " + s.suffix})
	err = outcome("createWorkspace", created, err, http.StatusCreated)
	if isStatus(err, http.StatusUnauthorized) || isStatus(err, http.StatusForbidden) {
		return nil, fmt.Errorf("the server refused the admin token (%v): use the token of this server "+
			"(%s, or the admin-token file of its data dir)", err, envAdminToken)
	}
	if err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	if created.JSON201 == nil {
		return nil, errNoAnswer("createWorkspace")
	}
	ws := *created.JSON201

	specs := []struct {
		provider string
		body     hxapi.ConnectionRequest
		sub      hxapi.Resource
		note     string
	}{
		{"GITHUB", hxapi.ConnectionRequest{Kind: "GITHUB_APP", SourceServerUrl: ptr("https://github.com"),
			Config: &map[string]any{"installationId": s.installationID}},
			resource("repository", strconv.FormatInt(s.repoID, 10), s.fullName()),
			fmt.Sprintf("installationId %d", s.installationID)},
		{"GITLAB", hxapi.ConnectionRequest{Kind: "GITLAB", SourceServerUrl: ptr(s.gitlabURL),
			Config: &map[string]any{"groupId": s.gitlabGroupID}, Secret: ptr(s.gitlabSecret)},
			resource("project", strconv.FormatInt(s.projectID, 10), s.projectPath),
			fmt.Sprintf("groupId %d, token secret", s.gitlabGroupID)},
		{"SLACK", hxapi.ConnectionRequest{Kind: "SLACK", SourceServerUrl: ptr("https://slack.com"),
			Config: &map[string]any{"teamId": s.teamID, "appId": s.appID}},
			resource("channel", s.channelID, "#"+s.channelName),
			fmt.Sprintf("teamId %s, appId %s", s.teamID, s.appID)},
		{"OUTLINE", hxapi.ConnectionRequest{Kind: "OUTLINE", SourceServerUrl: ptr(s.outlineURL),
			Config: &map[string]any{}, Secret: ptr(s.outlineSecret)},
			resource("collection", s.collectionID, "Engineering"),
			"signing secret"},
	}
	d.printf("Workspace %s (id %d), its connections and subscriptions:\n", s.slug, ws.Id)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROVIDER\tCONNECTION\tSTATE\tCONFIG\tWEBHOOK URL\tSUBSCRIBED")
	conns := map[string]int{}
	for _, sp := range specs {
		r, err := d.api.hx.CreateConnectionWithResponse(ctx, s.slug, sp.body)
		if err := outcome("createConnection", r, err, http.StatusCreated); err != nil {
			return nil, fmt.Errorf("create %s connection: %w", sp.body.Kind, err)
		}
		if r.JSON201 == nil {
			return nil, errNoAnswer("createConnection")
		}
		c := *r.JSON201
		set, err := d.api.hx.ReplaceSubscriptionsWithResponse(ctx, s.slug, strconv.Itoa(c.Id),
			hxapi.ReplaceSubscriptionsJSONRequestBody{Resources: []hxapi.Resource{sp.sub}})
		if err := outcome("replaceSubscriptions", set, err, http.StatusOK); err != nil {
			return nil, fmt.Errorf("subscribe %s connection %d: %w", sp.provider, c.Id, err)
		}
		if set.JSON200 == nil {
			return nil, errNoAnswer("replaceSubscriptions")
		}
		if len(set.JSON200.Resources) != 1 {
			return nil, fmt.Errorf("subscribe %s connection %d: answered %d resources, want 1", sp.provider, c.Id, len(set.JSON200.Resources))
		}
		conns[sp.provider] = c.Id
		hook := deref(c.WebhookUrl)
		if c.WebhookUrl == nil {
			hook = "/webhooks/" + strings.ToLower(sp.provider) + " (shared)"
		}
		fmt.Fprintf(tw, "  %s\t%s #%d\t%s\t%s\t%s\t%s %s (%s)\n", sp.provider, c.Kind, c.Id, c.State, sp.note, hook,
			sp.sub.Type, deref(sp.sub.Name), sp.sub.Id)
	}
	_ = tw.Flush()
	return conns, nil
}

func resource(typ, id, name string) hxapi.Resource {
	return hxapi.Resource{Type: typ, Id: id, Name: &name}
}

func ptr[T any](v T) *T { return &v }

// Sending.

// sendResult is what a delivery got; the table and the checks read it.
type sendResult struct {
	delivery
	sent
}

func (d *demo) send(ctx context.Context, ds []delivery) {
	d.printf("\nDeliveries sent (signed as each provider signs them):\n")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tPROVIDER\tEVENT\tDELIVERY KEY\tHTTP\tANSWER\tEXPECTED OUTCOME")
	first := map[string]int{} // delivery key → number of its first sending
	hinted := map[string]bool{}
	for i, dl := range ds {
		if _, ok := first[dl.key]; !ok {
			first[dl.key] = i + 1
		}
		r := sendResult{delivery: dl, sent: d.api.post(ctx, dl.path, dl.body, dl.headers(dl.body))}
		answer := ""
		switch {
		case r.Err != nil:
			answer = r.Err.Error()
		case r.Answer.Error != "":
			answer = "error " + r.Answer.Error
		case r.Answer.Status == "dropped":
			answer = "dropped: " + r.Answer.Reason
		default:
			answer = fmt.Sprintf("%s stored=%d duplicates=%d", r.Answer.Status, r.Answer.Stored, r.Answer.Duplicates)
		}
		wantStored, wantDup, want := 1, 0, "stored once, then DONE"
		switch {
		case dl.bad:
			want = "stored once, then DEAD"
		case dl.duplicate:
			wantStored, wantDup, want = 0, 1, fmt.Sprintf("nothing stored: duplicate of #%d", first[dl.key])
		}
		ok := r.Err == nil && r.HTTPStatus == http.StatusAccepted && r.Answer.Status == "accepted" &&
			r.Answer.Stored == wantStored && r.Answer.Duplicates == wantDup
		mark := want
		if !ok {
			mark = "NO, wanted " + want
			h := ""
			if !hinted[dl.provider] {
				h, hinted[dl.provider] = hint(dl.provider, r.HTTPStatus), true
			}
			d.expect(false, "%s %s: answered %d %s, wanted 202 accepted stored=%d duplicates=%d%s",
				dl.provider, dl.event, r.HTTPStatus, answer, wantStored, wantDup, h)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d\t%s\t%s\n", i+1, dl.provider, dl.event, short(dl.key), r.HTTPStatus, answer, mark)
	}
	_ = tw.Flush()
}

// hint says what a refusal of the demo's delivery most likely means.
func hint(provider string, status int) string {
	if status != http.StatusUnauthorized {
		return ""
	}
	switch provider {
	case "GITHUB":
		return " (the server's " + envGitHubWebhookSecret + " is not the demo's: run both through make, or export the same value)"
	case "SLACK":
		return " (the server's " + envSlackSigningSecret + " is not the demo's: run both through make, or export the same value)"
	}
	return ""
}

// Waiting.

// waitDrained polls the workspace's inbox counts until nothing is QUEUED or LEASED, at most
// cfg.Wait.
func (d *demo) waitDrained(ctx context.Context) (hxapi.Inbox, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(d.cfg.Wait)
	for {
		r, err := d.api.hx.GetInboxCountsWithResponse(ctx, d.s.slug)
		if err := outcome("getInboxCounts", r, err, http.StatusOK); err != nil {
			return hxapi.Inbox{}, time.Since(start), fmt.Errorf("read the inbox: %w", err)
		}
		if r.JSON200 == nil {
			return hxapi.Inbox{}, time.Since(start), errNoAnswer("getInboxCounts")
		}
		in := *r.JSON200
		if in.Counts.QUEUED == 0 && in.Counts.LEASED == 0 {
			return in, time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return in, time.Since(start), fmt.Errorf("the claimers did not finish within %s: still %d QUEUED and %d LEASED "+
				"(oldest queued %ds; is the server's consumer running?)", d.cfg.Wait, in.Counts.QUEUED, in.Counts.LEASED, in.OldestQueuedAgeSeconds)
		}
		select {
		case <-ctx.Done():
			return in, time.Since(start), ctx.Err()
		case <-time.After(d.cfg.Poll):
		}
	}
}

func (d *demo) printInbox(in hxapi.Inbox, ds []delivery) {
	bad := 0
	for _, dl := range ds {
		if dl.bad {
			bad++
		}
	}
	d.printf("Inbox of %s (GET …/integration/inbox), rows by state:\n", d.s.slug)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tQUEUED\tLEASED\tDONE\tDEAD\t")
	fmt.Fprintf(tw, "  now\t%d\t%d\t%d\t%d\t\n", in.Counts.QUEUED, in.Counts.LEASED, in.Counts.DONE, in.Counts.DEAD)
	fmt.Fprintf(tw, "  expected\t0\t0\t%d\t%d\t(one row per stored delivery; the redelivery added none)\n", d.good, bad)
	_ = tw.Flush()
	d.expect(in.Counts.DONE == d.good, "inbox: %d rows DONE, want %d (one per good delivery)", in.Counts.DONE, d.good)
	d.expect(in.Counts.DEAD == bad, "inbox: %d rows DEAD, want %d (the broken delivery)", in.Counts.DEAD, bad)
}

// Mirrored data.

func (d *demo) mirrored(ctx context.Context) error {
	s := d.s
	hx := d.api.hx
	d.printf("\nMirrored (read back through the read APIs):\n")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(tw, "  "+strings.Join(cols, "\t")) }
	row("API", "ROW")

	// GitHub
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

	// GitLab
	projects, err := hx.ListGitLabProjectsWithResponse(ctx, s.slug, nil)
	if err := outcome("listGitLabProjects", projects, err, http.StatusOK); err != nil {
		return fmt.Errorf("GitLab projects: %w", err)
	}
	if projects.JSON200 == nil {
		return errNoAnswer("listGitLabProjects")
	}
	found = false
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

	// Slack
	channels, err := hx.ListSlackChannelsWithResponse(ctx, s.slug, nil)
	if err := outcome("listSlackChannels", channels, err, http.StatusOK); err != nil {
		return fmt.Errorf("seed Slack channels: %w", err)
	}
	if channels.JSON200 == nil {
		return errNoAnswer("listSlackChannels")
	}
	found = false
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

	// Outline
	docs, err := hx.ListOutlineDocumentsWithResponse(ctx, s.slug, nil)
	if err := outcome("listOutlineDocuments", docs, err, http.StatusOK); err != nil {
		return fmt.Errorf("seed Outline documents: %w", err)
	}
	if docs.JSON200 == nil {
		return errNoAnswer("listOutlineDocuments")
	}
	found = false
	for _, doc := range docs.JSON200.Items {
		revision := "-"
		if doc.Revision != nil {
			revision = strconv.Itoa(*doc.Revision)
		}
		row("GET …/outline/documents", fmt.Sprintf("document %q revision %s in collection %s", doc.Title, revision, deref(doc.CollectionId)))
		found = found || (doc.Id == s.documentID && doc.Title == s.documentTitle)
	}
	d.expect(found, "Outline: document %s of documents.update is not mirrored", s.documentID)
	return tw.Flush()
}

// Dead letters and replay.

// deadLetters prints the workspace's dead letters, finds the broken delivery's row by its
// delivery key through the deliveries browser, and returns its dead letter.
func (d *demo) deadLetters(ctx context.Context, ds []delivery) (*hxapi.DeadLetter, error) {
	r, err := d.api.hx.ListDeadLettersWithResponse(ctx, d.s.slug, nil)
	if err := outcome("listDeadLetters", r, err, http.StatusOK); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	if r.JSON200 == nil {
		return nil, errNoAnswer("listDeadLetters")
	}
	list := r.JSON200.Items
	d.printf("\nDead letters of %s:\n", d.s.slug)
	d.printDead(list)
	badKey := ""
	for _, dl := range ds {
		if dl.bad {
			badKey = dl.key
		}
	}
	var bad *hxapi.DeadLetter
	for i, dl := range list {
		if dl.DeliveryKey == badKey {
			bad = &list[i]
		}
	}
	d.expect(len(list) == 1, "dead letters: %d, want exactly 1 (the broken delivery)", len(list))
	d.expect(bad != nil, "dead letters: the broken GitHub issues delivery %s is not among them", short(badKey))
	if bad == nil {
		return nil, nil
	}
	d.expect(bad.Attempts == 1, "dead letter %d: %d attempts, want 1 (a payload that cannot be decoded is not retried)", bad.Id, bad.Attempts)

	// What an operator does with the provider's delivery id: find the row, then its trace.
	found, err := d.api.hx.ListDeliveriesWithResponse(ctx, d.s.slug, &hxapi.ListDeliveriesParams{DeliveryKey: &badKey})
	if err := outcome("listDeliveries", found, err, http.StatusOK); err != nil {
		return nil, fmt.Errorf("find delivery %s: %w", short(badKey), err)
	}
	if found.JSON200 == nil {
		return nil, errNoAnswer("listDeliveries")
	}
	rows := found.JSON200.Items
	if !d.expect(len(rows) == 1 && rows[0].Id == bad.Id, "deliveries with deliveryKey %s: %d rows, want only row %d", short(badKey), len(rows), bad.Id) {
		return bad, nil
	}
	detail, err := d.api.hx.GetDeliveryWithResponse(ctx, d.s.slug, strconv.Itoa(bad.Id))
	if err := outcome("getDelivery", detail, err, http.StatusOK); err != nil {
		return nil, fmt.Errorf("read delivery %d: %w", bad.Id, err)
	}
	if detail.JSON200 == nil {
		return nil, errNoAnswer("getDelivery")
	}
	trace := "none (this server traces nothing)"
	if detail.JSON200.TraceId != nil {
		trace = *detail.JSON200.TraceId
	}
	d.printf("Found by its provider delivery id (GET …/deliveries?deliveryKey=%s): row %d, %s, %d attempt(s), trace id %s\n",
		short(badKey), detail.JSON200.Id, detail.JSON200.State, len(detail.JSON200.Attempts), trace)
	return bad, nil
}

func (d *demo) printDead(items []hxapi.DeadLetter) {
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tPROVIDER\tEVENT\tDELIVERY KEY\tERROR CLASS\tATTEMPTS\tDEAD AT")
	for _, dl := range items {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\n", dl.Id, dl.Provider, dl.EventType, short(dl.DeliveryKey),
			dl.ErrorClass, dl.Attempts, timestamp(dl.DeadAt))
	}
	if len(items) == 0 {
		fmt.Fprintln(tw, "  (none)")
	}
	_ = tw.Flush()
}

// replay sends the dead letter back to QUEUED, waits for the claimers and shows its new end.
func (d *demo) replay(ctx context.Context, dead hxapi.DeadLetter) error {
	id := strconv.Itoa(dead.Id)
	d.printf("\nReplaying dead letter %d: ", dead.Id)
	replayed, err := d.api.hx.ReplayDeadLetterWithResponse(ctx, d.s.slug, id)
	if err := outcome("replayDeadLetter", replayed, err, http.StatusOK); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", dead.Id, err)
	}
	if replayed.JSON200 == nil {
		return errNoAnswer("replayDeadLetter")
	}
	r := *replayed.JSON200
	by := "the instance administrator's token"
	if r.ReplayedByPrincipal != nil && *r.ReplayedByPrincipal == hxapi.ReplayedReplayedByPrincipalACCOUNT && r.ReplayedBy != nil {
		by = fmt.Sprintf("account %d", *r.ReplayedBy)
	}
	d.printf("answered %s (replayed by %s at %s)\n", r.State, by, r.ReplayedAt.Format(time.RFC3339))
	d.expect(r.State == hxapi.ReplayedStateQUEUED, "replay of %d answered state %s, want QUEUED", dead.Id, r.State)

	d.printf("Waiting for the claimers (at most %s) ... ", d.cfg.Wait)
	in, took, err := d.waitDrained(ctx)
	if err != nil {
		d.printf("\n")
		return err
	}
	d.printf("nothing QUEUED or LEASED after %s\n", took.Round(10*time.Millisecond))

	read, err := d.api.hx.GetDeadLetterWithResponse(ctx, d.s.slug, id)
	err = outcome("getDeadLetter", read, err, http.StatusOK)
	if isStatus(err, http.StatusNotFound) {
		d.expect(false, "dead letter %d is no longer DEAD after its replay, but its payload cannot be handled", dead.Id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read dead letter %d: %w", dead.Id, err)
	}
	if read.JSON200 == nil {
		return errNoAnswer("getDeadLetter")
	}
	again := *read.JSON200
	d.printf("Its new outcome: DEAD again after %d attempt(s), error class %s, dead at %s (first time: %s).\n",
		again.Attempts, again.ErrorClass, timestamp(again.DeadAt), timestamp(dead.DeadAt))
	d.printf("Inbox now:  QUEUED %d  LEASED %d  DONE %d  DEAD %d\n",
		in.Counts.QUEUED, in.Counts.LEASED, in.Counts.DONE, in.Counts.DEAD)
	d.printf("This is the expected end. The cause of this dead letter is in its payload (its \"issue\" is a string,\n" +
		"not an object), and a replay hands the same payload to the same handler, so it dies again. A replay\n" +
		"helps after fixing a cause outside the payload (a handler bug, a missing connection); this one can\n" +
		"only be fixed by the sender.\n")
	// The replay answered QUEUED, the claimers then left nothing QUEUED or LEASED, and the
	// dead-letter read finds only DEAD rows: so the row was handled again and died again.
	d.expect(again.Attempts == 1, "dead letter %d after replay: %d attempts, want 1 (replay restarts at attempt 0)", dead.Id, again.Attempts)
	d.expect(in.Counts.DEAD == 1 && in.Counts.DONE == d.good,
		"inbox after replay: %d DONE and %d DEAD, want %d and 1", in.Counts.DONE, in.Counts.DEAD, d.good)
	return nil
}

// timestamp prints a nullable timestamp of an answer.
func timestamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// Small helpers.

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// short abbreviates a long delivery key for the tables.
func short(key string) string {
	if len(key) > 13 {
		return key[:13] + "…"
	}
	return key
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
