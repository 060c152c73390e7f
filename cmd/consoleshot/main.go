// Command consoleshot is `make console-screenshot`: it starts a server (the real binary's
// bootstrap, in process) on a fresh database of the test cluster (HEPHAESTUS_TEST_DATABASE_URL,
// which `go run ./cmd/pgcluster run` sets), fills a demo workspace with `go run ./cmd/demo`
// (signed deliveries of every provider, one dead letter), then signs in to the console in
// headless Chromium and writes docs/console.png (the workspaces overview) and
// docs/console-dead-letter.png (a dead letter with its payload).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "console-screenshot:", err)
		os.Exit(1)
	}
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := pgtest.NewDatabase(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Drop(context.WithoutCancel(ctx))) }()

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	adminToken := "consoleshot-" + random()
	env := map[string]string{
		"DATABASE_URL":                     db.URL,
		"HEPHAESTUS_HTTP_ADDR":             addr,
		"HEPHAESTUS_ADMIN_TOKEN":           adminToken,
		"HEPHAESTUS_CREDENTIALS_KEY":       random(),
		"HEPHAESTUS_GITHUB_WEBHOOK_SECRET": "consoleshot-github-" + random(),
		"HEPHAESTUS_SLACK_SIGNING_SECRET":  "consoleshot-slack-" + random(),
	}
	cfg, err := bootstrap.LoadConfig(func(name string) string { return env[name] })
	if err != nil {
		return err
	}
	app, err := bootstrap.InitializeApp(cfg, zap.NewNop())
	if err != nil {
		return err
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- app.Run(serveCtx) }()
	defer func() {
		stop()
		err = errors.Join(err, <-served)
	}()
	base := "http://" + addr
	if err := waitReady(ctx, base); err != nil {
		return err
	}

	demo := exec.CommandContext(ctx, "go", "run", "./cmd/demo")
	demo.Env = append(os.Environ(), "HEPHAESTUS_DEMO_URL="+base, "HEPHAESTUS_ADMIN_TOKEN="+adminToken,
		"HEPHAESTUS_GITHUB_WEBHOOK_SECRET="+env["HEPHAESTUS_GITHUB_WEBHOOK_SECRET"],
		"HEPHAESTUS_SLACK_SIGNING_SECRET="+env["HEPHAESTUS_SLACK_SIGNING_SECRET"])
	demo.Stdout, demo.Stderr = os.Stderr, os.Stderr
	if err := demo.Run(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return screenshots(ctx, base, adminToken)
}

func waitReady(ctx context.Context, base string) error {
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server not ready: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func screenshots(ctx context.Context, base, adminToken string) error {
	dir, err := os.MkdirTemp("", "consoleshot-chromium-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := os.Getenv("HEPHAESTUS_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(dir))
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()

	if err := chromedp.Do(tab,
		chromedp.Navigate(base+"/console/sign-in"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#sign-in")),
		chromedp.WaitVisible(chromedp.CSS("section.card")),
	); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	overview, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	if err := write("docs/console.png", overview); err != nil {
		return err
	}
	if err := chromedp.Do(tab,
		chromedp.Click(chromedp.CSS(`section.card a[href$="/dead-letters"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.list tbody tr a")),
		chromedp.Click(chromedp.CSS("table.list tbody tr a")),
		chromedp.WaitVisible(chromedp.CSS("pre.payload")),
	); err != nil {
		return fmt.Errorf("open the dead letter: %w", err)
	}
	dead, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	return write("docs/console-dead-letter.png", dead)
}

func write(path string, png []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "console-screenshot: wrote", path)
	return nil
}
