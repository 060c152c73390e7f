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
	cfg     demoConfig
	api     *api
	out     io.Writer
	s       scenario
	good    int      // deliveries that must end DONE
	badKeys []string // the delivery keys of those that must end DEAD
	fail    []string // what was expected and did not happen
}

// expect records what was expected and did not happen (ok false); it returns ok.
func (d *demo) expect(ok bool, format string, args ...any) bool {
	if !ok {
		d.fail = append(d.fail, fmt.Sprintf(format, args...))
	}
	return ok
}

// printf prints to the demo's output.
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
		if dl.bad {
			d.badKeys = append(d.badKeys, dl.key)
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
	d.printInbox(inbox)
	if err := d.mirrored(ctx); err != nil {
		return d.result(err)
	}
	dead, err := d.deadLetters(ctx)
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

// table is a table of the demo's output; the caller flushes it.
func (d *demo) table() *tabwriter.Writer { return tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0) }

// deref prints an optional string of an answer ("-" for none).
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

// firstLine is the first line of a commit message.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
