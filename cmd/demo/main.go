// Command demo is `make demo`: against a running server (`make run`) it creates a demo
// workspace with one connection per provider through the management API, sends signed,
// real-shaped deliveries of GitHub, GitLab, Slack and Outline (one of them broken on purpose,
// one of them twice), waits for the claimers, and prints what was stored, handled, mirrored and
// dead-lettered; then it replays the dead letter and shows that it dies again.
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
	d := &demo{cfg: cfg, api: &api{base: cfg.BaseURL, token: cfg.AdminToken, hc: cfg.Client}, out: out, s: newScenario(time.Now())}

	if err := d.api.ready(ctx); err != nil {
		return fmt.Errorf("no ready server at %s (%v): start one with `make run`, or point %s at it", cfg.BaseURL, err, envDemoURL)
	}
	d.printf("Hephaestus demo against %s\n\n", cfg.BaseURL)

	conns, err := d.setUp(ctx)
	if err != nil {
		return err
	}
	deliveries := d.s.deliveries(cfg, conns["GITLAB"], conns["OUTLINE"])
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

type workspaceJSON struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
}

type connectionJSON struct {
	ID         int64  `json:"id"`
	Kind       string `json:"kind"`
	State      string `json:"state"`
	WebhookURL string `json:"webhookUrl"`
}

type resource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// setUp creates the workspace, one ACTIVE connection per provider and their subscriptions;
// it returns the connection ids by provider.
func (d *demo) setUp(ctx context.Context) (map[string]int64, error) {
	s := d.s
	var ws workspaceJSON
	err := d.api.call(ctx, http.MethodPost, "/api/admin/workspaces",
		map[string]string{"slug": s.slug, "name": "Demo " + s.suffix}, http.StatusCreated, &ws)
	if isStatus(err, http.StatusUnauthorized) || isStatus(err, http.StatusForbidden) {
		return nil, fmt.Errorf("the server refused the admin token (%v): use the token of this server "+
			"(%s, or the admin-token file of its data dir)", err, envAdminToken)
	}
	if err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}

	base := "/api/workspaces/" + s.slug
	specs := []struct {
		provider string
		body     map[string]any
		sub      resource
		note     string
	}{
		{"GITHUB", map[string]any{"kind": "GITHUB_APP", "sourceServerUrl": "https://github.com",
			"config": map[string]any{"installationId": s.installationID}},
			resource{"repository", strconv.FormatInt(s.repoID, 10), s.fullName()},
			fmt.Sprintf("installationId %d", s.installationID)},
		{"GITLAB", map[string]any{"kind": "GITLAB", "sourceServerUrl": s.gitlabURL,
			"config": map[string]any{"groupId": s.gitlabGroupID}, "secret": s.gitlabSecret},
			resource{"project", strconv.FormatInt(s.projectID, 10), s.projectPath},
			fmt.Sprintf("groupId %d, token secret", s.gitlabGroupID)},
		{"SLACK", map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com",
			"config": map[string]any{"teamId": s.teamID, "appId": s.appID}},
			resource{"channel", s.channelID, "#" + s.channelName},
			fmt.Sprintf("teamId %s, appId %s", s.teamID, s.appID)},
		{"OUTLINE", map[string]any{"kind": "OUTLINE", "sourceServerUrl": s.outlineURL,
			"config": map[string]any{}, "secret": s.outlineSecret},
			resource{"collection", s.collectionID, "Engineering"},
			"signing secret"},
	}
	d.printf("Workspace %s (id %d), its connections and subscriptions:\n", s.slug, ws.ID)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROVIDER\tCONNECTION\tSTATE\tCONFIG\tWEBHOOK URL\tSUBSCRIBED")
	conns := map[string]int64{}
	for _, sp := range specs {
		var c connectionJSON
		if err := d.api.call(ctx, http.MethodPost, base+"/connections", sp.body, http.StatusCreated, &c); err != nil {
			return nil, fmt.Errorf("create %s connection: %w", sp.body["kind"], err)
		}
		var set struct {
			Resources []resource `json:"resources"`
		}
		path := base + "/connections/" + strconv.FormatInt(c.ID, 10) + "/subscriptions"
		if err := d.api.call(ctx, http.MethodPut, path, map[string]any{"resources": []resource{sp.sub}}, http.StatusOK, &set); err != nil {
			return nil, fmt.Errorf("subscribe %s connection %d: %w", sp.provider, c.ID, err)
		}
		if len(set.Resources) != 1 {
			return nil, fmt.Errorf("subscribe %s connection %d: answered %d resources, want 1", sp.provider, c.ID, len(set.Resources))
		}
		conns[sp.provider] = c.ID
		hook := c.WebhookURL
		if hook == "" {
			hook = "/webhooks/" + strings.ToLower(sp.provider) + " (shared)"
		}
		fmt.Fprintf(tw, "  %s\t%s #%d\t%s\t%s\t%s\t%s %s (%s)\n", sp.provider, c.Kind, c.ID, c.State, sp.note, hook,
			sp.sub.Type, sp.sub.Name, sp.sub.ID)
	}
	_ = tw.Flush()
	return conns, nil
}

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

type inboxJSON struct {
	Counts                 map[string]int64 `json:"counts"`
	OldestQueuedAgeSeconds int64            `json:"oldestQueuedAgeSeconds"`
	BusiestScopes          []struct {
		ScopeKey string `json:"scopeKey"`
		Queued   int64  `json:"queued"`
	} `json:"busiestScopes"`
}

// waitDrained polls the workspace's inbox until nothing is QUEUED or LEASED, at most cfg.Wait.
func (d *demo) waitDrained(ctx context.Context) (inboxJSON, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(d.cfg.Wait)
	path := "/api/workspaces/" + d.s.slug + "/integration/inbox"
	for {
		var in inboxJSON
		if err := d.api.get(ctx, path, &in); err != nil {
			return in, time.Since(start), fmt.Errorf("read the inbox: %w", err)
		}
		if in.Counts["QUEUED"] == 0 && in.Counts["LEASED"] == 0 {
			return in, time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return in, time.Since(start), fmt.Errorf("the claimers did not finish within %s: still %d QUEUED and %d LEASED "+
				"(oldest queued %ds; is the server's consumer running?)", d.cfg.Wait, in.Counts["QUEUED"], in.Counts["LEASED"], in.OldestQueuedAgeSeconds)
		}
		select {
		case <-ctx.Done():
			return in, time.Since(start), ctx.Err()
		case <-time.After(d.cfg.Poll):
		}
	}
}

func (d *demo) printInbox(in inboxJSON, ds []delivery) {
	bad := 0
	for _, dl := range ds {
		if dl.bad {
			bad++
		}
	}
	d.printf("Inbox of %s (GET …/integration/inbox), rows by state:\n", d.s.slug)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tQUEUED\tLEASED\tDONE\tDEAD\t")
	fmt.Fprintf(tw, "  now\t%d\t%d\t%d\t%d\t\n", in.Counts["QUEUED"], in.Counts["LEASED"], in.Counts["DONE"], in.Counts["DEAD"])
	fmt.Fprintf(tw, "  expected\t0\t0\t%d\t%d\t(one row per stored delivery; the redelivery added none)\n", d.good, bad)
	_ = tw.Flush()
	d.expect(in.Counts["DONE"] == int64(d.good), "inbox: %d rows DONE, want %d (one per good delivery)", in.Counts["DONE"], d.good)
	d.expect(in.Counts["DEAD"] == int64(bad), "inbox: %d rows DEAD, want %d (the broken delivery)", in.Counts["DEAD"], bad)
}

// Mirrored data.

type page[T any] struct {
	Items []T `json:"items"`
	Total int `json:"total"`
}

func (d *demo) mirrored(ctx context.Context) error {
	s := d.s
	ws := "/api/workspaces/" + s.slug
	d.printf("\nMirrored (read back through the read APIs):\n")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(tw, "  "+strings.Join(cols, "\t")) }
	row("API", "ROW")

	// GitHub
	var repos page[struct {
		ID       int64  `json:"id"`
		FullName string `json:"fullName"`
		PushedAt string `json:"pushedAt"`
	}]
	if err := d.api.get(ctx, ws+"/repositories", &repos); err != nil {
		return fmt.Errorf("GitHub repositories: %w", err)
	}
	found := false
	for _, r := range repos.Items {
		row("GET …/repositories", fmt.Sprintf("repository %d %s", r.ID, r.FullName))
		found = found || r.ID == s.repoID
	}
	d.expect(found, "GitHub: repository %d is not mirrored", s.repoID)
	repo := ws + "/repositories/" + strconv.FormatInt(s.repoID, 10)
	var issues page[struct {
		Number int      `json:"number"`
		Title  string   `json:"title"`
		State  string   `json:"state"`
		Author *string  `json:"author"`
		Labels []string `json:"labels"`
	}]
	var pulls page[struct {
		Number int    `json:"number"`
		Title  string `json:"title"`
	}]
	var commits page[struct {
		SHA        string `json:"sha"`
		Message    string `json:"message"`
		AuthorName string `json:"authorName"`
	}]
	if found {
		if err := d.api.get(ctx, repo+"/issues", &issues); err != nil {
			return fmt.Errorf("GitHub issues: %w", err)
		}
		if err := d.api.get(ctx, repo+"/pulls", &pulls); err != nil {
			return fmt.Errorf("GitHub pull requests: %w", err)
		}
		if err := d.api.get(ctx, repo+"/commits", &commits); err != nil {
			return fmt.Errorf("GitHub commits: %w", err)
		}
	}
	found = false
	for _, i := range issues.Items {
		row("GET …/repositories/{id}/issues", fmt.Sprintf("issue #%d %q %s by %s, labels %s", i.Number, i.Title, i.State, deref(i.Author), strings.Join(i.Labels, ",")))
		found = found || (i.Number == s.issueNumber && i.Title == s.issueTitle)
	}
	d.expect(found, "GitHub: issue #%d of the issues delivery is not mirrored", s.issueNumber)
	for _, p := range pulls.Items {
		row("GET …/repositories/{id}/pulls", fmt.Sprintf("pull request #%d %q", p.Number, p.Title))
	}
	if len(pulls.Items) == 0 {
		row("GET …/repositories/{id}/pulls", "(none: the demo sends no pull_request)")
	}
	for _, sha := range s.commitSHAs {
		found := false
		for _, c := range commits.Items {
			found = found || c.SHA == sha
		}
		d.expect(found, "GitHub: commit %s of the push is not mirrored", sha[:7])
	}
	for _, c := range commits.Items {
		row("GET …/repositories/{id}/commits", fmt.Sprintf("commit %s %q by %s", c.SHA[:7], firstLine(c.Message), c.AuthorName))
	}

	// GitLab
	var projects page[struct {
		ID                int64  `json:"id"`
		PathWithNamespace string `json:"pathWithNamespace"`
		Monitored         bool   `json:"monitored"`
	}]
	if err := d.api.get(ctx, ws+"/gitlab/projects", &projects); err != nil {
		return fmt.Errorf("GitLab projects: %w", err)
	}
	found = false
	for _, p := range projects.Items {
		row("GET …/gitlab/projects", fmt.Sprintf("project %d %s", p.ID, p.PathWithNamespace))
		found = found || p.ID == s.projectID
	}
	d.expect(found, "GitLab: project %d is not mirrored", s.projectID)
	if found {
		var mrs page[struct {
			IID             int    `json:"iid"`
			Title           string `json:"title"`
			State           string `json:"state"`
			Ready           *bool  `json:"ready"`
			ReadinessReason string `json:"readinessReason"`
		}]
		if err := d.api.get(ctx, ws+"/gitlab/projects/"+strconv.FormatInt(s.projectID, 10)+"/merge-requests", &mrs); err != nil {
			return fmt.Errorf("GitLab merge requests: %w", err)
		}
		found = false
		for _, m := range mrs.Items {
			ready := "readiness unknown"
			if m.Ready != nil {
				ready = "ready " + strconv.FormatBool(*m.Ready)
				if m.ReadinessReason != "" {
					ready += " (" + m.ReadinessReason + ")"
				}
			}
			row("GET …/gitlab/projects/{id}/merge-requests", fmt.Sprintf("merge request !%d %q %s, %s", m.IID, m.Title, m.State, ready))
			found = found || m.IID == s.mrIID
		}
		d.expect(found, "GitLab: merge request !%d is not mirrored", s.mrIID)
	}
	row("", fmt.Sprintf("(the Issue Hook's issue #%d has no read API; its row is in the DONE count)", s.glIssueIID))

	// Slack
	var channels page[struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Consent string `json:"consent"`
	}]
	if err := d.api.get(ctx, ws+"/slack/channels", &channels); err != nil {
		return fmt.Errorf("seed Slack channels: %w", err)
	}
	found = false
	for _, c := range channels.Items {
		row("GET …/slack/channels", fmt.Sprintf("channel %s consent %s", c.ID, c.Consent))
		found = found || (c.ID == s.channelID && c.Consent == "GRANTED")
	}
	d.expect(found, "Slack: channel %s has no GRANTED consent (the bot's member_joined_channel)", s.channelID)
	if found {
		var msgs page[struct {
			TS     string  `json:"ts"`
			UserID *string `json:"userId"`
			Text   string  `json:"text"`
		}]
		if err := d.api.get(ctx, ws+"/slack/channels/"+s.channelID+"/messages", &msgs); err != nil {
			return fmt.Errorf("seed Slack messages: %w", err)
		}
		found = false
		for _, m := range msgs.Items {
			row("GET …/slack/channels/{id}/messages", fmt.Sprintf("message %s by %s %q", m.TS, deref(m.UserID), m.Text))
			found = found || (m.TS == s.messageTS && m.Text == s.messageText)
		}
		d.expect(found, "Slack: the channel message %s is not mirrored", s.messageTS)
	}

	// Outline
	var docs page[struct {
		ID           string  `json:"id"`
		CollectionID *string `json:"collectionId"`
		Title        string  `json:"title"`
		Revision     int64   `json:"revision"`
	}]
	if err := d.api.get(ctx, ws+"/outline/documents", &docs); err != nil {
		return fmt.Errorf("seed Outline documents: %w", err)
	}
	found = false
	for _, doc := range docs.Items {
		row("GET …/outline/documents", fmt.Sprintf("document %q revision %d in collection %s", doc.Title, doc.Revision, deref(doc.CollectionID)))
		found = found || (doc.ID == s.documentID && doc.Title == s.documentTitle)
	}
	d.expect(found, "Outline: document %s of documents.update is not mirrored", s.documentID)
	return tw.Flush()
}

// Dead letters and replay.

type deadLetterJSON struct {
	ID          int64   `json:"id"`
	Provider    string  `json:"provider"`
	EventType   string  `json:"eventType"`
	DeliveryKey string  `json:"deliveryKey"`
	ScopeKey    string  `json:"scopeKey"`
	DeadAt      *string `json:"deadAt"`
	Attempts    int     `json:"attempts"`
	ErrorClass  string  `json:"errorClass"`
}

// deadLetters prints the workspace's dead letters and returns the broken delivery's.
func (d *demo) deadLetters(ctx context.Context, ds []delivery) (*deadLetterJSON, error) {
	var list page[deadLetterJSON]
	if err := d.api.get(ctx, "/api/workspaces/"+d.s.slug+"/integration/dead-letters", &list); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	d.printf("\nDead letters of %s:\n", d.s.slug)
	d.printDead(list.Items)
	badKey := ""
	for _, dl := range ds {
		if dl.bad {
			badKey = dl.key
		}
	}
	var bad *deadLetterJSON
	for i, dl := range list.Items {
		if dl.DeliveryKey == badKey {
			bad = &list.Items[i]
		}
	}
	d.expect(len(list.Items) == 1, "dead letters: %d, want exactly 1 (the broken delivery)", len(list.Items))
	d.expect(bad != nil, "dead letters: the broken GitHub issues delivery %s is not among them", short(badKey))
	if bad != nil {
		d.expect(bad.Attempts == 1, "dead letter %d: %d attempts, want 1 (a payload that cannot be decoded is not retried)", bad.ID, bad.Attempts)
	}
	return bad, nil
}

func (d *demo) printDead(items []deadLetterJSON) {
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tPROVIDER\tEVENT\tDELIVERY KEY\tERROR CLASS\tATTEMPTS\tDEAD AT")
	for _, dl := range items {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\n", dl.ID, dl.Provider, dl.EventType, short(dl.DeliveryKey),
			dl.ErrorClass, dl.Attempts, deref(dl.DeadAt))
	}
	if len(items) == 0 {
		fmt.Fprintln(tw, "  (none)")
	}
	_ = tw.Flush()
}

// replay sends the dead letter back to QUEUED, waits for the claimers and shows its new end.
func (d *demo) replay(ctx context.Context, dead deadLetterJSON) error {
	path := "/api/workspaces/" + d.s.slug + "/integration/dead-letters/" + strconv.FormatInt(dead.ID, 10)
	var r struct {
		ID                  int64  `json:"id"`
		State               string `json:"state"`
		ReplayedBy          *int64 `json:"replayedBy"`
		ReplayedByPrincipal string `json:"replayedByPrincipal"`
		ReplayedAt          string `json:"replayedAt"`
	}
	d.printf("\nReplaying dead letter %d: ", dead.ID)
	if err := d.api.call(ctx, http.MethodPost, path+"/replay", nil, http.StatusOK, &r); err != nil {
		return fmt.Errorf("replay dead letter %d: %w", dead.ID, err)
	}
	by := "the instance administrator's token"
	if r.ReplayedByPrincipal == "ACCOUNT" && r.ReplayedBy != nil {
		by = fmt.Sprintf("account %d", *r.ReplayedBy)
	}
	d.printf("answered %s (replayed by %s at %s)\n", r.State, by, r.ReplayedAt)
	d.expect(r.State == "QUEUED", "replay of %d answered state %s, want QUEUED", dead.ID, r.State)

	d.printf("Waiting for the claimers (at most %s) ... ", d.cfg.Wait)
	in, took, err := d.waitDrained(ctx)
	if err != nil {
		d.printf("\n")
		return err
	}
	d.printf("nothing QUEUED or LEASED after %s\n", took.Round(10*time.Millisecond))

	var again deadLetterJSON
	err = d.api.get(ctx, path, &again)
	if isStatus(err, http.StatusNotFound) {
		d.expect(false, "dead letter %d is no longer DEAD after its replay, but its payload cannot be handled", dead.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read dead letter %d: %w", dead.ID, err)
	}
	d.printf("Its new outcome: DEAD again after %d attempt(s), error class %s, dead at %s (first time: %s).\n",
		again.Attempts, again.ErrorClass, deref(again.DeadAt), deref(dead.DeadAt))
	d.printf("Inbox now:  QUEUED %d  LEASED %d  DONE %d  DEAD %d\n",
		in.Counts["QUEUED"], in.Counts["LEASED"], in.Counts["DONE"], in.Counts["DEAD"])
	d.printf("This is the expected end. The cause of this dead letter is in its payload (its \"issue\" is a string,\n" +
		"not an object), and a replay hands the same payload to the same handler, so it dies again. A replay\n" +
		"helps after fixing a cause outside the payload (a handler bug, a missing connection); this one can\n" +
		"only be fixed by the sender.\n")
	// The replay answered QUEUED, the claimers then left nothing QUEUED or LEASED, and the
	// dead-letter read finds only DEAD rows: so the row was handled again and died again.
	d.expect(again.Attempts == 1, "dead letter %d after replay: %d attempts, want 1 (replay restarts at attempt 0)", dead.ID, again.Attempts)
	d.expect(in.Counts["DEAD"] == 1 && in.Counts["DONE"] == int64(d.good),
		"inbox after replay: %d DONE and %d DEAD, want %d and 1", in.Counts["DONE"], in.Counts["DEAD"], d.good)
	return nil
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
