package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodule"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// TestDemoAgainstTheRealServer is the spec that keeps `make demo` from rotting: it starts the
// real server in-process (bootstrap, a fresh database of the test cluster), runs the demo
// against it exactly as `make demo` does, and stops the server cleanly.
func TestDemoAgainstTheRealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	db, err := pgtest.NewDatabase(ctx)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Drop(context.Background()); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	const (
		adminToken   = "demo-spec-admin-token-0123456789"
		githubSecret = "demo-spec-github-secret"
		slackSecret  = "demo-spec-slack-secret"
	)
	addr := freeAddr(t)
	env := map[string]string{
		bootstrap.EnvDatabaseURL:      db.URL,
		bootstrap.EnvHTTPAddr:         addr,
		bootstrap.EnvAdminToken:       adminToken,
		bootstrap.EnvCredentialsKey:   base64.StdEncoding.EncodeToString(key),
		githubmodule.EnvWebhookSecret: githubSecret,
		slackmodule.EnvSigningSecret:  slackSecret,
		bootstrap.EnvPollInterval:     "200ms",
		bootstrap.EnvPoisonBaseDelay:  "100ms",
	}
	cfg, err := bootstrap.LoadConfig(func(name string) string { return env[name] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	app, err := bootstrap.InitializeApp(cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatalf("initialize app: %v", err)
	}
	appCtx, stopApp := context.WithCancel(context.Background())
	defer stopApp()
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = app.Run(appCtx)
	}()
	// stop cancels the server and waits for Run to return; Run owns every goroutine it
	// started, so nothing of the server outlives the test.
	stop := func() error {
		stopApp()
		select {
		case <-done:
			return runErr
		case <-time.After(60 * time.Second):
			t.Fatal("the server did not stop within 60s of its cancellation")
			return nil
		}
	}
	defer func() { _ = stop() }()

	base := "http://" + addr
	waitReady(ctx, t, base, done)

	var out bytes.Buffer
	err = run(ctx, demoConfig{
		BaseURL:             base,
		AdminToken:          adminToken,
		GitHubWebhookSecret: githubSecret,
		SlackSigningSecret:  slackSecret,
		Wait:                maxWait,
		Poll:                100 * time.Millisecond,
	}, &out)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("run returned %v", err)
	}
	for _, want := range []string{
		"Deliveries sent", "DELIVERY KEY", "stored=1 duplicates=0", "stored=0 duplicates=1",
		"rows by state", "Mirrored", "GET …/repositories/{id}/commits", "GET …/gitlab/projects/{id}/merge-requests",
		"GET …/slack/channels/{id}/messages", "GET …/outline/documents",
		"Dead letters of", "ERROR CLASS", "DEAD again", "Result: OK",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}

	if err := stop(); err != nil {
		t.Fatalf("the server's Run returned %v after its cancellation, want nil (a clean stop)", err)
	}
}

// TestDemoRefusesAMissingSecret shows the message `make demo` users get without the secrets.
func TestDemoRefusesAMissingSecret(t *testing.T) {
	_, err := loadConfig(func(name string) string {
		if name == envAdminToken {
			return "some-admin-token-0123456789"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), envGitHubWebhookSecret) || !strings.Contains(err.Error(), "make demo") {
		t.Fatalf("loadConfig without secrets: %v, want an error naming %s and make demo", err, envGitHubWebhookSecret)
	}
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// waitReady waits for GET /readyz to answer 200, or fails when the server stopped.
func waitReady(ctx context.Context, t *testing.T, base string, done <-chan struct{}) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			t.Fatal("the server stopped before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the server was not ready within 60s")
		}
	}
}
